import { HANDED_JSON, handOver } from '../turns/turn-statements.js';

// The statements of an attempt's outcome that are written by hand for the `pg` pool.

/**
 * Successes of many attempts in one statement, each fenced by its `attempt_id` (no history row:
 * the success is read back from the row, see EXECUTION_HISTORY), and the hand-over of each freed
 * task's turn. Answers the attempts that were current, the slots handed their turn, and the tasks
 * whose ended run a parked slot waits behind although none was handed here (the park may have
 * committed after this statement began: the caller hands over again, in a statement of its own).
 * A row's `finished_at` is the instant the statement reaches it (`clock_timestamp()`), not when the
 * statement began: one waiting behind another row's lock has not yet touched this one, so a claim
 * meanwhile sees this run in progress and unheld and may skip a slot on it — its recorded end must
 * then be after that slot's time, or the history would explain the skip wrongly.
 */
export const SUCCEED_AND_HAND_OVER = `
  WITH req AS (SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::jsonb[]) AS r(id, attempt_id, result)),
  ended AS (
    UPDATE live_execution e SET status = 'succeeded', finished_at = clock_timestamp(), lease_until = NULL, error = NULL, result = req.result
    FROM req WHERE e.id = ANY($1::uuid[]) AND e.id = req.id AND e.status = 'running' AND e.attempt_id = req.attempt_id
    RETURNING e.id, e.attempt_id, e.task_id, e.exclusive, e.waited_on
  ),
  freed AS (SELECT task_id FROM ended WHERE exclusive),
  ${handOver('freed', 'ended')}
  SELECT (SELECT COALESCE(array_agg(attempt_id), '{}') FROM ended) AS current,
    ${HANDED_JSON} AS handed,
    (SELECT COALESCE(array_agg(DISTINCT task_id), '{}') FROM ended WHERE waited_on AND exclusive AND task_id NOT IN (SELECT task_id FROM handed)) AS waited`;
