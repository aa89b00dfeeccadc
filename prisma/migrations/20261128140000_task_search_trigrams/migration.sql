-- The task list's search (`?q=`: a substring of the name or the description, ILIKE '%q%') reads the
-- matching rows through trigram indexes instead of every task: at 1,000,000 tasks a search of three
-- characters or more takes milliseconds, not a scan of the table (a shorter one has no trigram and
-- still scans). pg_trgm ships with PostgreSQL and is a trusted extension: the database's owner may
-- create it.
CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE INDEX "task_name_trgm_idx" ON "task" USING GIN ("name" gin_trgm_ops);

CREATE INDEX "task_description_trgm_idx" ON "task" USING GIN ("description" gin_trgm_ops);
