-- What re-plans a task is versioned apart from everything else: `version` moves on every change
-- (If-Match), `plan_version` only when the schedule, handler, payload or policy changes, and that is
-- what a planned execution's `task_version` refers to. Existing rows planned under `version` keep
-- matching.
ALTER TABLE "task" ADD COLUMN "plan_version" INTEGER NOT NULL DEFAULT 1;
UPDATE "task" SET "plan_version" = "version";

-- A schedule the planner cannot compute leaves the task active with its cursor where it was; the
-- error is shown on the task and the planner tries again after a minute.
ALTER TABLE "task" ADD COLUMN "last_error" TEXT;
ALTER TABLE "task" ADD COLUMN "last_error_at" TIMESTAMPTZ(3);

-- When a claim first made this slot wait its turn (a backlog runs one after another): a run that
-- waited belongs to a backlog, and the slots that come while it runs wait behind it too.
ALTER TABLE "task_execution" ADD COLUMN "held_at" TIMESTAMPTZ(3);

-- An execution in progress when its task is edited finishes its slot under the definition it
-- started with (handler, payload, timeout, retry policy), copied here by the edit.
ALTER TABLE "task_execution" ADD COLUMN "pinned_definition" JSONB;

-- Due, not yet started slots of a task, by slot: a claim waits for the earlier ones (backlogs run
-- in slot order) and an edit or pause finds the ones it must re-plan, without reading history.
CREATE INDEX "task_execution_pending_idx" ON "task_execution"("task_id", "scheduled_for") WHERE "status" IN ('scheduled', 'queued');
