-- The unique index on ("task_id", "scheduled_for") already serves newest-first reads of a task's
-- executions (a b-tree is read backwards as cheaply as forwards). The DESC copy only cost every
-- planned slot one more index insertion.
DROP INDEX "task_execution_task_id_scheduled_for_desc_idx";
