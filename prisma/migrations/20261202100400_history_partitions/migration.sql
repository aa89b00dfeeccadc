-- History lifecycle (5 of 5): `task_execution` and `execution_event` partitioned by range of the
-- slot (`scheduled_for`), a partition per day (or shorter, for a short retention), so that history
-- past its retention is dropped whole instead of deleted row by row. The tables as they were become
-- the first partitions (`*_legacy`, every slot before `history_horizon.legacy_until`) without a
-- rewrite: their range is proven by the checks validated before, their keys were built before, and
-- every other index is attached as it is. Only catalog changes happen here (a few milliseconds
-- under ACCESS EXCLUSIVE).

-- An event no longer references its execution by a foreign key (a key into a partitioned table
-- would make every dropped day a scan): it lives in the partition of its execution's slot and goes
-- with it.
ALTER TABLE "execution_event" DROP CONSTRAINT "execution_event_execution_id_fkey";

ALTER TABLE "task_execution" DROP CONSTRAINT "task_execution_pkey";
ALTER TABLE "task_execution" ADD CONSTRAINT "task_execution_legacy_pkey" PRIMARY KEY USING INDEX "task_execution_id_scheduled_for_key";
ALTER TABLE "execution_event" DROP CONSTRAINT "execution_event_pkey";
ALTER TABLE "execution_event" ADD CONSTRAINT "execution_event_legacy_pkey" PRIMARY KEY USING INDEX "execution_event_id_scheduled_for_key";

ALTER TABLE "task_execution" RENAME TO "task_execution_legacy";
ALTER TABLE "task_execution_legacy" RENAME CONSTRAINT "task_execution_task_id_fkey" TO "task_execution_legacy_task_id_fkey";
ALTER INDEX "task_execution_task_id_scheduled_for_key" RENAME TO "task_execution_legacy_task_id_scheduled_for_key";
ALTER INDEX "task_execution_concurrency_held_idx" RENAME TO "task_execution_legacy_concurrency_held_idx";
ALTER INDEX "task_execution_concurrency_running_idx" RENAME TO "task_execution_legacy_concurrency_running_idx";
ALTER INDEX "task_execution_dead_idx" RENAME TO "task_execution_legacy_dead_idx";
ALTER INDEX "task_execution_namespace_running_idx" RENAME TO "task_execution_legacy_namespace_running_idx";
ALTER INDEX "task_execution_orphan_idx" RENAME TO "task_execution_legacy_orphan_idx";
ALTER INDEX "task_execution_parked_idx" RENAME TO "task_execution_legacy_parked_idx";
ALTER INDEX "task_execution_pending_idx" RENAME TO "task_execution_legacy_pending_idx";
ALTER INDEX "task_execution_quota_held_idx" RENAME TO "task_execution_legacy_quota_held_idx";
ALTER INDEX "task_execution_rate_held_idx" RENAME TO "task_execution_legacy_rate_held_idx";
ALTER INDEX "task_execution_retrying_idx" RENAME TO "task_execution_legacy_retrying_idx";
ALTER INDEX "task_execution_running_idx" RENAME TO "task_execution_legacy_running_idx";
ALTER INDEX "task_execution_waiting_idx" RENAME TO "task_execution_legacy_waiting_idx";
-- The overlap guard of the previous version stays on its own rows until they are gone (the new
-- guard, `task_run_guard`, covers every partition).
ALTER INDEX "task_execution_one_running_exclusive" RENAME TO "task_execution_legacy_one_running_exclusive";
ALTER TABLE "execution_event" RENAME TO "execution_event_legacy";
ALTER INDEX "execution_event_execution_id_at_idx" RENAME TO "execution_event_legacy_execution_id_at_idx";

CREATE TABLE "task_execution" (LIKE "task_execution_legacy" INCLUDING DEFAULTS INCLUDING GENERATED)
    PARTITION BY RANGE ("scheduled_for");
ALTER TABLE "task_execution" ADD CONSTRAINT "task_execution_pkey" PRIMARY KEY ("id", "scheduled_for");
ALTER TABLE "task_execution" ADD CONSTRAINT "task_execution_task_id_fkey"
    FOREIGN KEY ("task_id") REFERENCES "task"("id") ON DELETE SET NULL ON UPDATE CASCADE;
CREATE UNIQUE INDEX "task_execution_task_id_scheduled_for_key" ON "task_execution"("task_id", "scheduled_for");
CREATE INDEX "task_execution_concurrency_held_idx" ON "task_execution" ("concurrency_key", "fire_at")
  WHERE "held_at" IS NOT NULL AND "status" IN ('scheduled', 'queued', 'retrying');
CREATE INDEX "task_execution_concurrency_running_idx" ON "task_execution" ("concurrency_key")
  WHERE "status" = 'running' AND "concurrency_key" IS NOT NULL;
CREATE INDEX "task_execution_dead_idx" ON "task_execution"("scheduled_for" DESC, "id" DESC) WHERE "status" = 'dead';
CREATE INDEX "task_execution_namespace_running_idx" ON "task_execution" ("namespace") WHERE "status" = 'running';
CREATE INDEX "task_execution_orphan_idx" ON "task_execution"("task_name", "scheduled_for" DESC) WHERE "task_id" IS NULL;
CREATE INDEX "task_execution_parked_idx" ON "task_execution" ("task_id", "scheduled_for") WHERE "parked_at" IS NOT NULL;
CREATE INDEX "task_execution_pending_idx" ON "task_execution"("task_id", "scheduled_for") WHERE "status" IN ('scheduled', 'queued');
CREATE INDEX "task_execution_quota_held_idx" ON "task_execution" ("quota_namespace", "fire_at")
  WHERE "held_at" IS NOT NULL AND "status" IN ('scheduled', 'queued', 'retrying') AND "quota_namespace" IS NOT NULL;
CREATE INDEX "task_execution_rate_held_idx" ON "task_execution" ("rate_key", "fire_at")
  WHERE "held_at" IS NOT NULL AND "status" IN ('scheduled', 'queued', 'retrying');
CREATE INDEX "task_execution_retrying_idx" ON "task_execution"("task_id") WHERE "status" = 'retrying';
CREATE INDEX "task_execution_running_idx" ON "task_execution"("task_id") WHERE "status" = 'running';
CREATE INDEX "task_execution_waiting_idx" ON "task_execution"("fire_at", "id") WHERE "status" IN ('scheduled', 'queued', 'retrying');

CREATE TABLE "execution_event" (LIKE "execution_event_legacy" INCLUDING DEFAULTS) PARTITION BY RANGE ("scheduled_for");
ALTER SEQUENCE "execution_event_id_seq" OWNED BY "execution_event"."id";
ALTER TABLE "execution_event" ADD CONSTRAINT "execution_event_pkey" PRIMARY KEY ("id", "scheduled_for");
CREATE INDEX "execution_event_execution_id_at_idx" ON "execution_event"("execution_id", "at");

-- An execution id made by this version is a UUIDv7 whose timestamp is the slot: every read by id
-- finds the row's partition from the id alone. Null for any other id (the previous version's).
CREATE FUNCTION "punctual_slot_of"("id" UUID) RETURNS TIMESTAMPTZ(3)
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT CASE WHEN substr("id"::text, 15, 1) = '7'
    THEN timestamptz 'epoch' + ('x' || lpad(replace(substr("id"::text, 1, 13), '-', ''), 16, '0'))::bit(64)::bigint * interval '1 millisecond'
  END
$$;

-- An id for an execution of `slot` made in SQL (a backfill by hand, a benchmark's history), its slot
-- rounded to the millisecond as timestamptz(3) stores it: the same
-- UUIDv7 as executionIdFor (libs/contract) makes, its timestamp the slot, its other bits random.
CREATE FUNCTION "punctual_execution_id"("slot" TIMESTAMPTZ) RETURNS UUID
LANGUAGE sql VOLATILE STRICT PARALLEL SAFE AS $$
  SELECT (lpad(to_hex(round(extract(epoch FROM "slot") * 1000)::bigint), 12, '0') || '7' || substr(md5(random()::text), 1, 3)
          || to_hex(8 + floor(random() * 4)::int) || substr(md5(random()::text), 1, 15))::uuid
$$;

-- One partition of each table for the slots in [from_at, to_at): created standalone and attached,
-- so that it never blocks the statements on the table (ATTACH takes SHARE UPDATE EXCLUSIVE). Its
-- execution ids carry their slots (checked). Returns false when it exists already. Named by its
-- start, in UTC: task_execution_pYYYYMMDDtHHMM.
CREATE FUNCTION "punctual_create_history_partition"("from_at" TIMESTAMPTZ, "to_at" TIMESTAMPTZ) RETURNS BOOLEAN
LANGUAGE plpgsql AS $$
DECLARE
  suffix TEXT := to_char("from_at" AT TIME ZONE 'UTC', 'YYYYMMDD"t"HH24MI');
  executions TEXT := 'task_execution_p' || suffix;
  events TEXT := 'execution_event_p' || suffix;
BEGIN
  IF to_regclass(format('%I', executions)) IS NOT NULL THEN
    RETURN false;
  END IF;
  EXECUTE format('CREATE TABLE %I (LIKE "task_execution" INCLUDING DEFAULTS INCLUDING GENERATED) WITH (fillfactor = 85)', executions);
  EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I CHECK ("punctual_slot_of"("id") = "scheduled_for")', executions, executions || '_id_slot');
  EXECUTE format('ALTER TABLE "task_execution" ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', executions, "from_at", "to_at");
  EXECUTE format('CREATE TABLE %I (LIKE "execution_event" INCLUDING DEFAULTS)', events);
  EXECUTE format('ALTER TABLE "execution_event" ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', events, "from_at", "to_at");
  RETURN true;
END $$;

DO $$
DECLARE until_at TIMESTAMPTZ := (SELECT "legacy_until" FROM "history_horizon" WHERE "id" = 1);
BEGIN
  EXECUTE format('ALTER TABLE "task_execution" ATTACH PARTITION "task_execution_legacy" FOR VALUES FROM (MINVALUE) TO (%L)', until_at);
  EXECUTE format('ALTER TABLE "execution_event" ATTACH PARTITION "execution_event_legacy" FOR VALUES FROM (MINVALUE) TO (%L)', until_at);
  -- A new installation has no history to keep: its first days get partitions of their own.
  IF NOT EXISTS (SELECT 1 FROM "task_execution_legacy") AND NOT EXISTS (SELECT 1 FROM "execution_event_legacy") THEN
    DROP TABLE "task_execution_legacy";
    DROP TABLE "execution_event_legacy";
    UPDATE "history_horizon" SET "legacy_until" = NULL WHERE "id" = 1;
    PERFORM "punctual_create_history_partition"(d, d + interval '1 day')
    FROM generate_series(date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC', until_at - interval '1 day', interval '1 day') AS d;
  END IF;
END $$;

-- The live rows, for the claim path (see history_horizon): the leader replaces these views as the
-- horizon moves, which replans every statement that reads them. Replaced, never altered by hand.
CREATE VIEW "live_execution" AS SELECT * FROM "task_execution" WHERE "scheduled_for" >= '-infinity'::timestamptz;
CREATE VIEW "live_execution_event" AS SELECT * FROM "execution_event" WHERE "scheduled_for" >= '-infinity'::timestamptz;
