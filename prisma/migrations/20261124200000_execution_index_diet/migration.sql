-- Fewer index entries per run. A state change rewrites the whole row (the overlap guard indexes
-- `status`, so no change of state can be a HOT update) and every index whose predicate the new
-- row matches gets an entry: a run on time (insert, claim, success) wrote 14 entries in six
-- indexes, and now writes 10.

-- `(status, fire_at)` indexed every row of every state on every change. What reads it wants the
-- rows still waiting for a worker (planned, released, between attempts: the leader's sweeps and
-- misfire pass, the relay paging in (fire_at, id) order), the running ones (the reaper), and the
-- dead letters: one partial index each, which a finished run leaves.
DROP INDEX "task_execution_status_fire_at_idx";
CREATE INDEX "task_execution_waiting_idx" ON "task_execution"("fire_at", "id") WHERE "status" IN ('scheduled', 'queued', 'retrying');
-- Keyed on a column a lease renewal does not touch, so renewing a lease can stay a HOT update.
CREATE INDEX "task_execution_running_idx" ON "task_execution"("task_id") WHERE "status" = 'running';
CREATE INDEX "task_execution_dead_idx" ON "task_execution"("scheduled_for" DESC, "id" DESC) WHERE "status" = 'dead';

-- A task's history is read through `(task_id, scheduled_for)`; only a deleted task's, kept under
-- its name, needs the name.
DROP INDEX "task_execution_task_name_scheduled_for_idx";
CREATE INDEX "task_execution_orphan_idx" ON "task_execution"("task_name", "scheduled_for" DESC) WHERE "task_id" IS NULL;

-- Room on each page for a lease renewal to stay on it.
ALTER TABLE "task_execution" SET (fillfactor = 85);

-- A claim no longer marks slots that waited their turn (the judgement does not read it).
ALTER TABLE "task_execution" DROP COLUMN "held_at";
