-- Graceful under overload (DESIGN §5): a slot that must wait its turn — an earlier slot of its task
-- due, or a run of it in progress — is parked on its row instead of bouncing through the queue,
-- and the worker that records the end of the run ahead of it hands it its turn.
--
-- `parked_at`: since when the slot waits its turn (its queue job ended); NULL when it is not parked.
-- `waited_on`: a parked slot waits behind this row. The park sets it on the runs it waits behind in
-- the same statement, so the end of such a run learns of the waiter even when its own statement
-- began before the park committed (and looks again).
ALTER TABLE "task_execution" ADD COLUMN "parked_at" TIMESTAMPTZ(3);
ALTER TABLE "task_execution" ADD COLUMN "waited_on" BOOLEAN NOT NULL DEFAULT false;

-- The parked slots of a task, in slot order: the next one to hand its turn to, and the relay's
-- look for any whose turn came without a word.
CREATE INDEX "task_execution_parked_idx" ON "task_execution" ("task_id", "scheduled_for") WHERE "parked_at" IS NOT NULL;

-- The permits of a key: only runs that have a key (every run used to have an entry, NULL for most).
DROP INDEX "task_execution_concurrency_running_idx";
CREATE INDEX "task_execution_concurrency_running_idx" ON "task_execution" ("concurrency_key") WHERE "status" = 'running' AND "concurrency_key" IS NOT NULL;
