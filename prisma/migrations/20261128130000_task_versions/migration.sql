-- Every version of every task, whole: each change (create, edit, pause, resume, rollback) stores
-- the definition it left, with who made it, when and why. Kept by name, so a deleted task's
-- versions stay readable and it can be restored; version numbers go on across a name's tasks.
CREATE TABLE "task_version" (
    "task_name" TEXT NOT NULL,
    "version" INTEGER NOT NULL,
    "task_id" UUID NOT NULL,
    "action" TEXT NOT NULL,
    "definition" JSONB NOT NULL,
    "changed_at" TIMESTAMPTZ(3) NOT NULL,
    "changed_by" TEXT NOT NULL,
    "reason" TEXT,

    CONSTRAINT "task_version_pkey" PRIMARY KEY ("task_name", "version")
);

-- Why a task was paused (`POST /v1/tasks/:name/pause { note }`); cleared when it resumes.
ALTER TABLE "task" ADD COLUMN "pause_note" TEXT;

-- A failure breaker (`policy.pauseAfter`): this many slots ended dead within this long pause the task.
ALTER TABLE "task" ADD COLUMN "pause_after_failures" INTEGER;
ALTER TABLE "task" ADD COLUMN "pause_after_within_ms" INTEGER;

-- A run limit (`schedule.remainingRuns`): the slots still to plan to run, counting down; at 0 the task completes.
ALTER TABLE "task" ADD COLUMN "remaining_runs" INTEGER;
