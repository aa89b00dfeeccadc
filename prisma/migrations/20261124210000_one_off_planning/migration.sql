-- One-offs are planned up to a minute ahead (a campaign is planned as it is created, not in the
-- last seconds before its instant): the planner finds them through an index of their own, so the
-- longer horizon does not make it scan every recurring task due within that minute.
CREATE INDEX "task_one_off_due_idx" ON "task"("next_run_at") WHERE "status" = 'active' AND "schedule_kind" = 'at';
