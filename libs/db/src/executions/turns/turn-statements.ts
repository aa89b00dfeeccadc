import { FIRST_ATTEMPT_STANDS, queuedAtOnClaimSql } from '../claim/claim-statements.js';
import { HANDLER_OF_ROW, plannedSql, runInProgressSql } from '../predicates.js';

// The statements of a worker's turn-taking (DESIGN §5 "Graceful under overload"), prepared once
// per connection: the park of a slot whose turn has not come, and the hand-over of a task's turn
// to its next parked slot when the run ahead of it ends.

/**
 * The nearest earlier exclusive slot due of each first attempt of `me` (`task_id`, `scheduled_for`,
 * `first`): the slot a newcomer waits behind — one row, however long the backlog before it.
 */
const NEAREST_EARLIER_DUE = `
    SELECT n.id FROM me CROSS JOIN LATERAL (
      SELECT o.id FROM live_execution o
      WHERE me.first AND o.task_id = me.task_id AND ${plannedSql('o')} AND o.exclusive
        AND o.fire_at <= statement_timestamp() AND o.scheduled_for < me.scheduled_for
      ORDER BY o.scheduled_for DESC LIMIT 1
    ) n`;

/**
 * What the slots of `req` (`id`, `status`, `attempt`: as judged) wait behind: the task's exclusive
 * runs in progress, and for a first attempt the nearest earlier slot due. At most a few rows per
 * slot, however long the backlog.
 */
const AHEAD = `
  me AS (
    SELECT e.id, e.task_id, e.scheduled_for, e.attempt = 0 AS first
    FROM req CROSS JOIN LATERAL (SELECT * FROM live_execution x WHERE x.id = req.id OFFSET 0) e
    WHERE e.status = req.status AND e.attempt = req.attempt AND e.task_id IS NOT NULL
  ),
  ahead AS (
    SELECT h.id FROM me JOIN live_execution h ON h.task_id = me.task_id AND h.status = 'running' AND h.exclusive AND h.id <> me.id
    UNION
    SELECT h.id FROM me JOIN live_execution h ON h.task_id = me.task_id AND h.status = 'retrying' AND h.exclusive AND h.id <> me.id
    UNION
    ${NEAREST_EARLIER_DUE}
  )`;

/**
 * The parks' "what it waits behind", as CTEs after `marked` rows are found in `ahead` (`id`): each
 * such run marked `waited_on` — a row lock that orders the park with the end of that run (see PARK).
 */
const MARK_AHEAD = `
  marked AS (
    UPDATE live_execution h SET waited_on = true
    FROM (SELECT DISTINCT id FROM ahead) a
    WHERE h.id = a.id AND h.exclusive AND h.status IN ('running', 'retrying', 'scheduled', 'queued')
    RETURNING h.task_id
  )`;

/**
 * Parks slots whose turn has not come (`$1` ids, as judged: `$2` status, `$3` attempt; `$4` when
 * the leader released the job, epoch ms, recorded as a claim records it): their queue job ends, and the end of the run ahead hands them their turn. The runs each waits behind are
 * marked `waited_on` in the same statement — a row lock that orders the park with the end of such
 * a run: a run that ended first is no longer ahead (not marked, and a slot with nothing ahead any
 * more is not parked: its turn has come, the caller claims it again), and one that ends after sees
 * the mark and looks for the waiter even if its own statement began before the park committed.
 * Returns the ids parked.
 */
export const PARK = `
  WITH req AS (SELECT * FROM unnest($1::uuid[], $2::execution_status[], $3::int[], $4::float8[]) AS r(id, status, attempt, released_ms)),
  ${AHEAD},
  ${MARK_AHEAD}
  UPDATE live_execution e SET parked_at = COALESCE(e.parked_at, statement_timestamp()),
    -- Released on time, whatever its turn: the release its job carried is kept (a newcomer behind
    -- it judges the overlap by it), as a claim would record it.
    queued_at = ${queuedAtOnClaimSql('req.released_ms')}
  FROM req JOIN me USING (id)
  WHERE e.id = ANY($1::uuid[]) AND e.id = req.id AND e.status = req.status AND e.attempt = req.attempt AND EXISTS (SELECT 1 FROM marked WHERE marked.task_id = me.task_id)
  RETURNING e.id`;

/**
 * Parks on-time slots as the leader fires them (`$1` ids; `$2` the release, epoch ms) where the
 * claim's judgement could only say "wait your turn": a first attempt due by now (its `fire_at`
 * come) that stands (see FIRST_ATTEMPT_STANDS), nothing of its task in progress, and an earlier
 * slot due that has not begun — a backlog run still waiting for its turn. Such a slot gets no job,
 * claim or read until the end of the run ahead hands it its turn. A slot with a run of its task in
 * progress is left to the claim (its overlap policy may judge it); one with nothing ahead is not
 * parked. Marks what each waits behind as PARK does. Returns the ids parked. A property test holds
 * it to the judgement (test/db/direct-claim.property.test.ts).
 */
export const PARK_AT_FIRE = `
  WITH me AS (
    SELECT e.id, e.task_id, e.scheduled_for, true AS first
    FROM unnest($1::uuid[]) AS req(id) CROSS JOIN LATERAL (SELECT * FROM live_execution x WHERE x.id = req.id OFFSET 0) e
    JOIN task t ON t.id = e.task_id
    WHERE e.status = 'scheduled' AND e.attempt = 0 AND e.exclusive AND e.parked_at IS NULL AND e.held_at IS NULL
      AND e.fire_at <= statement_timestamp() AND ${FIRST_ATTEMPT_STANDS}
      AND NOT ${runInProgressSql('e', 'running')} AND NOT ${runInProgressSql('e', 'retrying')}
  ),
  ahead AS (${NEAREST_EARLIER_DUE}),
  ${MARK_AHEAD}
  UPDATE live_execution e SET parked_at = statement_timestamp(), queued_at = ${queuedAtOnClaimSql('$2::float8')}
  FROM me
  WHERE e.id = me.id AND e.status = 'scheduled' AND e.attempt = 0 AND e.parked_at IS NULL
    AND EXISTS (SELECT 1 FROM marked WHERE marked.task_id = me.task_id)
  RETURNING e.id`;

/**
 * The hand-over, as CTEs after `ended` (rows whose end frees their task: `id`, `task_id`,
 * `exclusive`; their own statement still sees them as they were): for each task of `tasks` (a CTE
 * of `task_id`), its next slot — a parked retry first (a retry finishes its slot before newcomers
 * start), else the earliest pending slot that is due — gets its turn if it is parked and nothing
 * else of the task is in progress: `parked_at` cleared, the row returned by `handed` (`id`,
 * `task_id`, `status`, `attempt`, `fire_ms`, `parked_ms`) for the caller to push its job. A slot
 * whose job is still in the queue needs no hand-over: it comes on its own.
 */
export const handOver = (tasks: string, ended: string) => `
  next AS (
    SELECT f.task_id, COALESCE(r.id, n.id) AS id FROM (
      -- Only a task with a slot parked has one to hand its turn to (one look in a small index).
      SELECT DISTINCT k.task_id FROM ${tasks} k
      WHERE k.task_id IS NOT NULL AND EXISTS (SELECT 1 FROM live_execution p WHERE p.task_id = k.task_id AND p.parked_at IS NOT NULL)
    ) f
    LEFT JOIN LATERAL (
      SELECT p.id FROM live_execution p
      WHERE p.task_id = f.task_id AND p.status = 'retrying' AND p.parked_at IS NOT NULL AND p.id NOT IN (SELECT id FROM ${ended})
      ORDER BY p.scheduled_for LIMIT 1
    ) r ON true
    LEFT JOIN LATERAL (
      SELECT p.id, p.parked_at FROM live_execution p
      WHERE p.task_id = f.task_id AND ${plannedSql('p')} AND p.exclusive AND p.fire_at <= statement_timestamp()
        AND p.id NOT IN (SELECT id FROM ${ended})
      ORDER BY p.scheduled_for LIMIT 1
    ) n ON r.id IS NULL AND n.parked_at IS NOT NULL
    WHERE COALESCE(r.id, n.id) IS NOT NULL
      AND NOT EXISTS (
        SELECT 1 FROM live_execution h WHERE h.task_id = f.task_id AND h.status = 'running' AND h.exclusive AND h.id NOT IN (SELECT id FROM ${ended}))
      AND NOT EXISTS (
        SELECT 1 FROM live_execution h WHERE h.task_id = f.task_id AND h.status = 'retrying' AND h.exclusive AND h.id <> COALESCE(r.id, n.id)
          AND h.id NOT IN (SELECT id FROM ${ended}))
  ),
  handed AS (
    UPDATE live_execution p SET parked_at = NULL
    FROM next WHERE p.id = next.id AND p.parked_at IS NOT NULL
    RETURNING p.id, p.task_id, p.status, p.attempt, (extract(epoch FROM p.fire_at) * 1000)::float8 AS fire_ms,
      (extract(epoch FROM statement_timestamp()) * 1000)::float8 AS handed_ms, ${HANDLER_OF_ROW('p')} AS handler
  )`;

/** The hand-over's answer: the slots handed their turn, as JSON (one row per statement). */
export const HANDED_JSON =
  `(SELECT COALESCE(json_agg(json_build_object('id', id, 'taskId', task_id, 'status', status, ` +
  `'attempt', attempt, 'fireMs', fire_ms, 'handedMs', handed_ms, 'handler', handler)), '[]') FROM ` +
  `handed)`;

/** The hand-over on its own, for the tasks `$1` (an end recorded by another statement, or a run whose end looked too early). */
export const HAND_OVER = `
  WITH asked AS (SELECT unnest($1::uuid[]) AS task_id),
  ended AS (SELECT NULL::uuid AS id WHERE false),
  ${handOver('asked', 'ended')}
  SELECT ${HANDED_JSON} AS handed`;
