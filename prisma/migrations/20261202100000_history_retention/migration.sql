-- History lifecycle (1 of 5): what is kept, and the ground for partitioning `task_execution` and
-- `execution_event` by day without a rewrite. Nothing here takes a lock for longer than a catalog
-- change; the scans and index builds come in the next migrations, each under a lock that lets
-- reads and writes go on.

-- A namespace's own retention (null: the cluster's HISTORY_RETENTION / DEAD_LETTER_RETENTION).
ALTER TABLE "namespace" ADD COLUMN "history_retention_ms" BIGINT,
    ADD COLUMN "dead_letter_retention_ms" BIGINT,
    ADD CONSTRAINT "namespace_history_retention" CHECK ("history_retention_ms" IS NULL OR "history_retention_ms" >= 3600000),
    ADD CONSTRAINT "namespace_dead_letter_retention" CHECK ("dead_letter_retention_ms" IS NULL OR "dead_letter_retention_ms" >= 3600000);

-- The live horizon: no execution that can still change (planned, queued, running, between
-- attempts) has a slot before `live_from`. The statements of the claim path read live rows through
-- the views `live_execution` and `live_execution_event`, which carry it as a constant, so they plan
-- only the partitions from it on; a writer that makes an older row live lowers it first, and the
-- leader raises it as old partitions fall quiet (see libs/db/src/history). `legacy_until`: the end
-- of the range kept by the table as it was before partitioning (null once that is gone).
CREATE TABLE "history_horizon" (
    "id" INTEGER NOT NULL DEFAULT 1,
    "live_from" TIMESTAMPTZ(3) NOT NULL DEFAULT '-infinity',
    "legacy_until" TIMESTAMPTZ(3),
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "history_horizon_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "history_horizon_one_row" CHECK ("id" = 1)
);
-- The table as it was keeps every slot before the day after tomorrow (UTC): what the previous
-- version plans and runs during an upgrade lands there; the days after it get partitions of their own.
INSERT INTO "history_horizon" ("id", "legacy_until")
VALUES (1, date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' + interval '2 days');

-- The no-overlap guard of an exclusive task, across partitions: the execution that last started an
-- exclusive attempt of the task. A claim takes it over only from the holder it saw ended (a
-- compare-and-set): two claims of one task, whatever their slots' days, cannot both start.
CREATE TABLE "task_run_guard" (
    "task_id" UUID NOT NULL,
    "execution_id" UUID NOT NULL,
    "taken_from" UUID,

    CONSTRAINT "task_run_guard_pkey" PRIMARY KEY ("task_id")
) WITH (fillfactor = 50);

-- What pruning took from a task's history that its health and its last run are read from: the
-- latest success, the failures since it, the latest finished slot and whether it succeeded, the
-- latest slot and the latest execution as it was (JSON), through `pruned_through`.
CREATE TABLE "task_history" (
    "task_id" UUID NOT NULL,
    "last_success_slot" TIMESTAMPTZ(3),
    "last_success_at" TIMESTAMPTZ(3),
    "failures_since_success" INTEGER NOT NULL DEFAULT 0,
    "last_finished_slot" TIMESTAMPTZ(3),
    "last_finished_ok" BOOLEAN,
    "last_slot" TIMESTAMPTZ(3),
    "last_execution" JSONB,
    "pruned_through" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "task_history_pkey" PRIMARY KEY ("task_id")
);

-- The versions of deleted tasks go after AUDIT_RETENTION, oldest first.
CREATE INDEX "task_version_changed_at_idx" ON "task_version" ("changed_at");

-- The table as it was becomes the first partition of the partitioned one: its range must be
-- proven, not scanned under the conversion's lock. NOT VALID adds the check at once; the next
-- migration validates it under a lock that lets reads and writes go on.
DO $$
DECLARE until_at timestamptz := (SELECT "legacy_until" FROM "history_horizon" WHERE "id" = 1);
BEGIN
  EXECUTE format('ALTER TABLE "task_execution" ADD CONSTRAINT "task_execution_legacy_range" CHECK ("scheduled_for" < %L) NOT VALID', until_at);
  -- An event carries its execution's slot, the partition key. The previous version writes none:
  -- its events (and every event already stored) take the default, which sorts before every slot.
  ALTER TABLE "execution_event" ADD COLUMN "scheduled_for" TIMESTAMPTZ(3) NOT NULL DEFAULT '-infinity';
  EXECUTE format('ALTER TABLE "execution_event" ADD CONSTRAINT "execution_event_legacy_range" CHECK ("scheduled_for" < %L) NOT VALID', until_at);
END $$;
