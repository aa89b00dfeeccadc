-- History lifecycle (4 of 5): the same key for execution_event, built without blocking writes.
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS "execution_event_id_scheduled_for_key" ON "execution_event" ("id", "scheduled_for");
