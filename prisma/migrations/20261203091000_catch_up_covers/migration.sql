-- A catch-up run records the first slot it stands in for (`covers_from`): it explains exactly the
-- slots from there to its own, and no missed slot of another outage before them. Null on a run
-- that is no catch-up, and on the catch-ups written before (the timeline reads those as it did).
-- A nullable column with no default: a change of the catalog only, on every partition.
ALTER TABLE "task_execution" ADD COLUMN "covers_from" TIMESTAMPTZ(3);

-- The view of live rows was expanded when it was made: made again, it carries the new column
-- (with the horizon it has now, as a constant, as the history keeper writes it).
DO $$
DECLARE
  horizon timestamptz := (SELECT live_from FROM history_horizon WHERE id = 1);
  literal text := CASE WHEN horizon IS NULL OR horizon = '-infinity' THEN '-infinity'
                       ELSE to_char(horizon AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') END;
BEGIN
  EXECUTE format('CREATE OR REPLACE VIEW live_execution AS SELECT * FROM task_execution WHERE scheduled_for >= %L::timestamptz', literal);
END $$;
