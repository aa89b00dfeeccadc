-- Labels (`{ "team": "billing" }`) and who manages a task (`punctual apply` sets it). Neither
-- changes what is planned. `GET /v1/tasks?label=k=v` filters with `labels @> '{"k":"v"}'`, which
-- the GIN index answers (jsonb_path_ops: containment only, and smaller than the default class).
ALTER TABLE "task" ADD COLUMN "labels" JSONB NOT NULL DEFAULT '{}';
ALTER TABLE "task" ADD COLUMN "managed_by" TEXT;

CREATE INDEX "task_labels_idx" ON "task" USING GIN ("labels" jsonb_path_ops);
CREATE INDEX "task_managed_by_idx" ON "task"("managed_by") WHERE "managed_by" IS NOT NULL;
