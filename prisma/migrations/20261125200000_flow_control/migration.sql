-- Flow control (DESIGN §5): concurrency keys and rate limits shared across tasks.
--
-- A task names its keys in its policy. An execution records the keys it started under (or waits
-- on), so a claim counts the runs holding a key and finds the runs waiting for it without reading
-- every task: `concurrency_key` of a `running` row whose lease holds is a permit (a worker that
-- dies keeps none past its lease), `held_at` marks a run held back, first when.
ALTER TABLE "task" ADD COLUMN "concurrency_key" TEXT;
ALTER TABLE "task" ADD COLUMN "concurrency_limit" INTEGER;
ALTER TABLE "task" ADD COLUMN "rate_key" TEXT;
ALTER TABLE "task" ADD COLUMN "rate_limit" INTEGER;
ALTER TABLE "task" ADD COLUMN "rate_per_ms" INTEGER;
-- A key and its limit come together (a CHECK passes on NULL: each part is tested for it).
ALTER TABLE "task" ADD CONSTRAINT "task_concurrency" CHECK (
  ("concurrency_key" IS NULL AND "concurrency_limit" IS NULL)
  OR ("concurrency_key" IS NOT NULL AND "concurrency_limit" IS NOT NULL
      AND length("concurrency_key") BETWEEN 1 AND 200 AND "concurrency_limit" BETWEEN 1 AND 10000));
ALTER TABLE "task" ADD CONSTRAINT "task_rate_limit" CHECK (
  ("rate_key" IS NULL AND "rate_limit" IS NULL AND "rate_per_ms" IS NULL)
  OR ("rate_key" IS NOT NULL AND "rate_limit" IS NOT NULL AND "rate_per_ms" IS NOT NULL
      AND length("rate_key") BETWEEN 1 AND 200 AND "rate_limit" BETWEEN 1 AND 10000 AND "rate_per_ms" BETWEEN 100 AND 86400000));

ALTER TABLE "task_execution" ADD COLUMN "concurrency_key" TEXT;
ALTER TABLE "task_execution" ADD COLUMN "rate_key" TEXT;
ALTER TABLE "task_execution" ADD COLUMN "held_at" TIMESTAMPTZ(3);

-- The permits of a key: its runs in progress.
CREATE INDEX "task_execution_concurrency_running_idx" ON "task_execution" ("concurrency_key") WHERE "status" = 'running';
-- The runs held back on a key, in the order they go.
CREATE INDEX "task_execution_concurrency_held_idx" ON "task_execution" ("concurrency_key", "fire_at")
  WHERE "held_at" IS NOT NULL AND "status" IN ('scheduled', 'queued', 'retrying');
CREATE INDEX "task_execution_rate_held_idx" ON "task_execution" ("rate_key", "fire_at")
  WHERE "held_at" IS NOT NULL AND "status" IN ('scheduled', 'queued', 'retrying');

-- The starts of each rate key, newest last: a start is allowed while fewer than `limit` lie within
-- `per` of now (a sliding window, exact). Rows older than a day (the longest `per`) are deleted.
CREATE TABLE "flow_start" (
    "id" BIGSERIAL NOT NULL,
    "key" TEXT NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL,
    "execution_id" UUID,
    CONSTRAINT "flow_start_pkey" PRIMARY KEY ("id")
);
CREATE INDEX "flow_start_key_at_idx" ON "flow_start" ("key", "at");
