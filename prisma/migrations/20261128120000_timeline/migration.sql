-- How long a run was held back by flow control before it started (null: never held): the
-- timeline's `flow_control` reason for a slot that ran late because its key was full.
ALTER TABLE "task_execution" ADD COLUMN "flow_waited_ms" INTEGER;

-- A task's audit entries by its name, in order: the versions of the task in force at each time,
-- which the timeline computes a range's slots from.
CREATE INDEX "audit_log_target_id_idx" ON "audit_log" ("target", "id");
