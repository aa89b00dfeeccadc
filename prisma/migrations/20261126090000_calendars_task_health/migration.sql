-- Calendars (DESIGN §6) and task health (DESIGN §8).
--
-- A calendar is a named set of excluded days. A task names the calendars it excludes
-- (`exclude`) and carries a copy of what they hold (`calendars`: name, version, zone, dates,
-- rules): its schedule is computed from its own row wherever it is computed (planner, edits,
-- previews, workers), and an edit of a calendar rewrites the copies of the tasks that use it in
-- the same transaction as their re-plan.
CREATE TABLE "calendar" (
    "name" TEXT NOT NULL,
    "description" TEXT,
    "timezone" TEXT,
    "dates" TEXT[] NOT NULL DEFAULT ARRAY[]::TEXT[],
    "rrules" TEXT[] NOT NULL DEFAULT ARRAY[]::TEXT[],
    "version" INTEGER NOT NULL DEFAULT 1,
    "managed_by" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "calendar_pkey" PRIMARY KEY ("name"),
    CONSTRAINT "calendar_name" CHECK ("name" ~ '^[a-z0-9][a-z0-9._-]{0,127}$')
);

ALTER TABLE "task" ADD COLUMN "exclude" TEXT[] NOT NULL DEFAULT ARRAY[]::TEXT[];
ALTER TABLE "task" ADD COLUMN "calendars" JSONB NOT NULL DEFAULT '[]';
-- The tasks that use a calendar: found on its edit and its delete.
CREATE INDEX "task_exclude_idx" ON "task" USING GIN ("exclude");

-- `slo.startWithin`: a task with one gets per-task metric series (bounded cardinality: opt-in).
ALTER TABLE "task" ADD COLUMN "slo_start_within_ms" INTEGER;
ALTER TABLE "task" ADD CONSTRAINT "task_slo_start_within" CHECK ("slo_start_within_ms" IS NULL OR "slo_start_within_ms" BETWEEN 1 AND 2147483647);
