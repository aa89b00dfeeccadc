-- A slot being retried still holds its task (DESIGN §4): a claim looks for the task's exclusive
-- executions between attempts as it looks for the running one (`task_execution_one_running_exclusive`),
-- through an index that holds only the few rows waiting for a retry.
CREATE INDEX "task_execution_retrying_idx" ON "task_execution"("task_id") WHERE "status" = 'retrying';
