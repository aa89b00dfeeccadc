-- History lifecycle (2 of 5): the range checks of the previous migration, validated. A scan of each
-- table under SHARE UPDATE EXCLUSIVE: reads and writes go on while it runs.
ALTER TABLE "task_execution" VALIDATE CONSTRAINT "task_execution_legacy_range";
ALTER TABLE "execution_event" VALIDATE CONSTRAINT "execution_event_legacy_range";
