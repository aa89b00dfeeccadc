-- A namespace's run quotas: at most `max_concurrent_runs` of its runs at once and at most
-- `max_runs_per_minute` starts in any minute, across every worker. Enforced at the claim as a
-- concurrency key and a rate key of the namespace are: a run over the quota is held (it waits, it
-- does not fail) and keeps its place.
ALTER TABLE "namespace" ADD COLUMN "max_runs_per_minute" INTEGER,
    ADD COLUMN "max_concurrent_runs" INTEGER,
    ADD CONSTRAINT "namespace_max_runs_per_minute" CHECK ("max_runs_per_minute" IS NULL OR "max_runs_per_minute" >= 0),
    ADD CONSTRAINT "namespace_max_concurrent_runs" CHECK ("max_concurrent_runs" IS NULL OR "max_concurrent_runs" >= 0);

-- The namespace whose run quotas a run was started under, or is held on (waiting for the quota, in
-- `fire_at` order); null otherwise. Every running run of a namespace counts against its
-- `max_concurrent_runs` (one started before the quota was set too): counted by the namespace.
ALTER TABLE "task_execution" ADD COLUMN "quota_namespace" TEXT;
CREATE INDEX "task_execution_namespace_running_idx" ON "task_execution" ("namespace")
  WHERE "status" = 'running';
CREATE INDEX "task_execution_quota_held_idx" ON "task_execution" ("quota_namespace", "fire_at")
  WHERE "held_at" IS NOT NULL AND "status" IN ('scheduled', 'queued', 'retrying') AND "quota_namespace" IS NOT NULL;

-- The starts of a namespace's runs under `max_runs_per_minute`: its window (as `flow_start` is a rate key's).
CREATE TABLE "quota_start" (
    "id" BIGSERIAL NOT NULL,
    "namespace" TEXT NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL,
    "execution_id" UUID,

    CONSTRAINT "quota_start_pkey" PRIMARY KEY ("id")
);
CREATE INDEX "quota_start_namespace_at_idx" ON "quota_start" ("namespace", "at");
