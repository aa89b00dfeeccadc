-- History lifecycle (3 of 5): the key the partitioned table needs, (id, scheduled_for), built without blocking writes (one statement, applied outside a transaction).
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS "task_execution_id_scheduled_for_key" ON "task_execution" ("id", "scheduled_for");
