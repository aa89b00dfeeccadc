-- Punctual: the whole data model (DESIGN §3).

-- CreateEnum
CREATE TYPE "schedule_kind" AS ENUM ('cron', 'rrule', 'at', 'every');
CREATE TYPE "task_status" AS ENUM ('active', 'paused', 'completed');
CREATE TYPE "overlap_policy" AS ENUM ('skip', 'allow', 'buffer_one', 'replace');
CREATE TYPE "misfire_policy" AS ENUM ('run_once', 'skip', 'run_all');
CREATE TYPE "dst_gap" AS ENUM ('shift', 'skip', 'end');
CREATE TYPE "dst_overlap" AS ENUM ('first', 'last', 'both');
CREATE TYPE "execution_status" AS ENUM ('scheduled', 'queued', 'running', 'retrying', 'succeeded', 'dead', 'skipped', 'missed', 'cancelled');
CREATE TYPE "skip_reason" AS ENUM ('overlap', 'late', 'paused', 'task_changed', 'task_deleted', 'dst');
CREATE TYPE "execution_trigger" AS ENUM ('schedule', 'catchup', 'manual', 'backfill');
CREATE TYPE "api_key_role" AS ENUM ('viewer', 'operator', 'admin');

-- CreateTable
CREATE TABLE "task" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "name" TEXT NOT NULL,
    "description" TEXT,
    "handler" TEXT NOT NULL,
    "payload" JSONB NOT NULL DEFAULT '{}',
    "secret_fields" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "schedule_kind" "schedule_kind" NOT NULL,
    "cron" TEXT,
    "rrule" TEXT,
    "run_at" TIMESTAMPTZ(3),
    "every_ms" BIGINT,
    "timezone" TEXT NOT NULL DEFAULT 'UTC',
    "start_at" TIMESTAMPTZ(3),
    "end_at" TIMESTAMPTZ(3),
    "jitter_ms" INTEGER NOT NULL DEFAULT 0,
    "dst_gap" "dst_gap",
    "dst_overlap" "dst_overlap",
    "overlap" "overlap_policy" NOT NULL DEFAULT 'skip',
    "misfire" "misfire_policy" NOT NULL DEFAULT 'run_once',
    "max_delay_ms" INTEGER NOT NULL DEFAULT 3600000,
    "max_attempts" INTEGER NOT NULL DEFAULT 3,
    "backoff_ms" INTEGER NOT NULL DEFAULT 30000,
    "backoff_max_ms" INTEGER NOT NULL DEFAULT 3600000,
    "timeout_ms" INTEGER NOT NULL DEFAULT 300000,
    "notify_url" TEXT,
    "notify_on" TEXT[] DEFAULT ARRAY['dead']::TEXT[],
    "secret" TEXT NOT NULL,
    "status" "task_status" NOT NULL DEFAULT 'active',
    "next_run_at" TIMESTAMPTZ(3),
    "last_scheduled_for" TIMESTAMPTZ(3),
    "missed_count" BIGINT NOT NULL DEFAULT 0,
    "version" INTEGER NOT NULL DEFAULT 1,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "task_pkey" PRIMARY KEY ("id")
);

CREATE TABLE "task_execution" (
    "id" UUID NOT NULL,
    "task_id" UUID,
    "task_name" TEXT NOT NULL,
    "scheduled_for" TIMESTAMPTZ(3) NOT NULL,
    "fire_at" TIMESTAMPTZ(3) NOT NULL,
    "trigger" "execution_trigger" NOT NULL DEFAULT 'schedule',
    "status" "execution_status" NOT NULL DEFAULT 'scheduled',
    "skip_reason" "skip_reason",
    "attempt" INTEGER NOT NULL DEFAULT 0,
    "attempt_id" UUID,
    "task_version" INTEGER NOT NULL,
    "exclusive" BOOLEAN NOT NULL DEFAULT true,
    "worker_id" TEXT,
    "queued_at" TIMESTAMPTZ(3),
    "started_at" TIMESTAMPTZ(3),
    "heartbeat_at" TIMESTAMPTZ(3),
    "lease_until" TIMESTAMPTZ(3),
    "finished_at" TIMESTAMPTZ(3),
    "next_attempt_at" TIMESTAMPTZ(3),
    "error" TEXT,
    "result" JSONB,
    "payload" JSONB,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "task_execution_pkey" PRIMARY KEY ("id")
);

CREATE TABLE "execution_event" (
    "id" BIGSERIAL NOT NULL,
    "execution_id" UUID NOT NULL,
    "from_status" "execution_status",
    "to_status" "execution_status" NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "worker_id" TEXT,
    "detail" JSONB,

    CONSTRAINT "execution_event_pkey" PRIMARY KEY ("id")
);

CREATE TABLE "scheduler_state" (
    "id" INTEGER NOT NULL DEFAULT 1,
    "epoch" BIGINT NOT NULL DEFAULT 0,
    "leader_id" TEXT,
    "acquired_at" TIMESTAMPTZ(3),
    "heartbeat_at" TIMESTAMPTZ(3),

    CONSTRAINT "scheduler_state_pkey" PRIMARY KEY ("id"),
    -- One row: the fencing epoch is a singleton.
    CONSTRAINT "scheduler_state_singleton" CHECK ("id" = 1)
);

CREATE TABLE "outbox" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "topic" TEXT NOT NULL,
    "payload" JSONB NOT NULL,
    "available_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "last_error" TEXT,
    "delivered_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "outbox_pkey" PRIMARY KEY ("id")
);

CREATE TABLE "api_key" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "name" TEXT NOT NULL,
    "prefix" TEXT NOT NULL,
    "hash" TEXT NOT NULL,
    "role" "api_key_role" NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_used_at" TIMESTAMPTZ(3),
    "revoked_at" TIMESTAMPTZ(3),

    CONSTRAINT "api_key_pkey" PRIMARY KEY ("id")
);

CREATE TABLE "audit_log" (
    "id" BIGSERIAL NOT NULL,
    "actor" TEXT NOT NULL,
    "action" TEXT NOT NULL,
    "target" TEXT NOT NULL,
    "before" JSONB,
    "after" JSONB,
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "audit_log_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "task_name_key" ON "task"("name");
CREATE UNIQUE INDEX "task_execution_task_id_scheduled_for_key" ON "task_execution"("task_id", "scheduled_for");
CREATE INDEX "task_execution_task_id_scheduled_for_desc_idx" ON "task_execution"("task_id", "scheduled_for" DESC);
CREATE INDEX "task_execution_status_fire_at_idx" ON "task_execution"("status", "fire_at");
CREATE INDEX "task_execution_task_name_scheduled_for_idx" ON "task_execution"("task_name", "scheduled_for" DESC);
CREATE INDEX "execution_event_execution_id_at_idx" ON "execution_event"("execution_id", "at");
CREATE UNIQUE INDEX "api_key_prefix_key" ON "api_key"("prefix");
CREATE INDEX "audit_log_at_idx" ON "audit_log"("at");

-- Partial indexes (not expressible in schema.prisma).
-- The planner's scan: only active tasks, by cursor; idle and paused tasks cost nothing.
CREATE INDEX "task_next_run_active_idx" ON "task"("next_run_at") WHERE "status" = 'active';
-- The overlap guard: at most one running exclusive execution per task, enforced by the database.
CREATE UNIQUE INDEX "task_execution_one_running_exclusive" ON "task_execution"("task_id") WHERE "status" = 'running' AND "exclusive";
-- The notifier's scan: undelivered rows by availability.
CREATE INDEX "outbox_pending_idx" ON "outbox"("available_at") WHERE "delivered_at" IS NULL;

-- AddForeignKey
ALTER TABLE "task_execution" ADD CONSTRAINT "task_execution_task_id_fkey" FOREIGN KEY ("task_id") REFERENCES "task"("id") ON DELETE SET NULL ON UPDATE CASCADE;
ALTER TABLE "execution_event" ADD CONSTRAINT "execution_event_execution_id_fkey" FOREIGN KEY ("execution_id") REFERENCES "task_execution"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- The fencing row.
INSERT INTO "scheduler_state" ("id", "epoch") VALUES (1, 0);
