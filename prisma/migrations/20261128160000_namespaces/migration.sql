-- Namespaces: one cluster for many teams (or many customers). A task, a calendar, their executions
-- and their audit entries belong to a namespace. A task's or a calendar's stored name is its key in
-- the cluster: the bare name in the `default` namespace, `<namespace>/<name>` in any other (a name
-- never holds a `/`), so names are unique per namespace and every row that already names a task
-- (executions, versions, audit entries, metrics) names it unambiguously without a second column.
-- The namespace is derived from that key by the database (a stored generated column), so no writer
-- can disagree with it.
CREATE TABLE "namespace" (
    "name" TEXT NOT NULL,
    "description" TEXT,
    "max_tasks" INTEGER,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "namespace_pkey" PRIMARY KEY ("name"),
    CONSTRAINT "namespace_name" CHECK ("name" ~ '^[a-z0-9-]{1,63}$'),
    CONSTRAINT "namespace_max_tasks" CHECK ("max_tasks" IS NULL OR "max_tasks" >= 0)
);

INSERT INTO "namespace" ("name", "description") VALUES ('default', 'tasks created without a namespace');

ALTER TABLE "task" ADD COLUMN "namespace" TEXT NOT NULL
    GENERATED ALWAYS AS (CASE WHEN strpos("name", '/') > 0 THEN split_part("name", '/', 1) ELSE 'default' END) STORED;
-- A task lives in a namespace that exists: deleting a namespace that holds tasks fails.
ALTER TABLE "task" ADD CONSTRAINT "task_namespace_fkey"
    FOREIGN KEY ("namespace") REFERENCES "namespace"("name") ON DELETE RESTRICT ON UPDATE RESTRICT;
-- One namespace's tasks in name order (its list, its count against `max_tasks`).
CREATE INDEX "task_namespace_name_idx" ON "task"("namespace", "name");

ALTER TABLE "calendar" DROP CONSTRAINT "calendar_name";
ALTER TABLE "calendar" ADD CONSTRAINT "calendar_name" CHECK ("name" ~ '^([a-z0-9-]{1,63}/)?[a-z0-9][a-z0-9._-]{0,127}$');
ALTER TABLE "calendar" ADD COLUMN "namespace" TEXT NOT NULL
    GENERATED ALWAYS AS (CASE WHEN strpos("name", '/') > 0 THEN split_part("name", '/', 1) ELSE 'default' END) STORED;
ALTER TABLE "calendar" ADD CONSTRAINT "calendar_namespace_fkey"
    FOREIGN KEY ("namespace") REFERENCES "namespace"("name") ON DELETE RESTRICT ON UPDATE RESTRICT;

-- An execution keeps its task's key after the task is deleted; its namespace is read from it.
ALTER TABLE "task_execution" ADD COLUMN "namespace" TEXT NOT NULL
    GENERATED ALWAYS AS (CASE WHEN strpos("task_name", '/') > 0 THEN split_part("task_name", '/', 1) ELSE 'default' END) STORED;

-- An entry about a task or a calendar belongs to its namespace; one about the cluster (API keys,
-- namespaces themselves) to none, and only a key of the whole cluster reads it.
ALTER TABLE "audit_log" ADD COLUMN "namespace" TEXT
    GENERATED ALWAYS AS (CASE
        WHEN "action" LIKE 'task.%' OR "action" LIKE 'calendar.%'
        THEN CASE WHEN strpos("target", '/') > 0 THEN split_part("target", '/', 1) ELSE 'default' END
    END) STORED;
CREATE INDEX "audit_log_namespace_id_idx" ON "audit_log"("namespace", "id");

-- A scoped key names the namespaces it may see; a key of the whole cluster names none.
ALTER TABLE "api_key" ADD COLUMN "namespaces" TEXT[] NOT NULL DEFAULT ARRAY[]::TEXT[];
