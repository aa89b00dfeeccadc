import { EVENT_CTE_TEXT, FIRST_CLAIM_CTE, GUARD_TAKEN, TAKE_RUN_GUARD } from './execution-transition.js';
import { earlierSlotDueSql, lateSql, plannedSql, runInProgressSql } from './predicates.js';

// The statements of a worker's turn-taking (DESIGN §5 "Graceful under overload"), prepared once
// per connection: the claim that needs no judgement, the park of a slot whose turn has not come,
// and the hand-over of a task's turn to its next parked slot when the run ahead of it ends.

/**
 * A first attempt `e` of task `t` that the judgement does not skip or leave to the misfire policy
 * (rule 3 of `judgeClaim`): a manual run, or its task not paused, the row on its task's plan (or
 * pinned by an edit), and a scheduled slot not late.
 */
const FIRST_ATTEMPT_STANDS = `(e.trigger = 'manual' OR (
    t.status <> 'paused'
    AND (e.pinned_definition IS NOT NULL OR e.task_version = t.plan_version)
    AND (e.trigger <> 'schedule' OR NOT (${lateSql('e', 't', 'statement_timestamp()')}))))`;

/**
 * `e.queued_at` as a claim or a park records it: the release its job carried (`releasedMs`, epoch
 * ms; never after now), kept once recorded, for a row still `scheduled`.
 */
export const queuedAtOnClaimSql = (releasedMs: string) =>
  `CASE WHEN e.status = 'scheduled' THEN COALESCE(e.queued_at, LEAST(to_timestamp(${releasedMs} / 1000.0), statement_timestamp()), statement_timestamp()) ELSE e.queued_at END`;

/**
 * When an execution may start without a judgement: the case of `judgeClaim` that says `run` for a
 * pending or retrying execution of a task with no flow control (DESIGN §5), in a namespace with no
 * run quotas — due by Postgres'
 * clock (a retry: its next attempt too), a first attempt of a scheduled slot on its plan version,
 * its task not paused and the slot not late (manual runs skip those checks), and an exclusive one
 * only while its task is free: no other exclusive run of it running, and for a first attempt none
 * between attempts and no earlier slot due. Over `e` (the execution) and `t` (its task); `now` is
 * the statement's clock. A property test holds it to `judgeClaim`: whatever this admits, the
 * judgement of the same rows says `run` (test/db/direct-claim.property.test.ts).
 */
export const STARTS_WITHOUT_JUDGEMENT = `
  e.status IN ('scheduled', 'queued', 'retrying') AND e.held_at IS NULL
  AND e.fire_at <= statement_timestamp()
  AND (e.status <> 'retrying' OR COALESCE(e.next_attempt_at, e.fire_at) <= statement_timestamp())
  AND t.concurrency_key IS NULL AND t.rate_key IS NULL
  AND NOT EXISTS (
    SELECT 1 FROM namespace n WHERE n.name = t.namespace AND (n.max_concurrent_runs IS NOT NULL OR n.max_runs_per_minute IS NOT NULL))
  AND (e.attempt > 0 OR ${FIRST_ATTEMPT_STANDS})
  AND (NOT e.exclusive OR (
    NOT ${runInProgressSql('e', 'running')}
    AND (e.attempt > 0 OR (
      NOT ${runInProgressSql('e', 'retrying')}
      AND NOT ${earlierSlotDueSql('e', 'statement_timestamp()')}))))`;

/**
 * The columns a claimed attempt comes back with (instants as epoch milliseconds: a number the
 * driver reads for free, where a timestamp costs a parse), over `m`, the moved row.
 */
export const CLAIMED_COLUMNS = `
  m.id, m.task_id, m.task_name, m.trigger, m.attempt, m.attempt_id, m.worker_id, m.exclusive, m.task_version, m.error,
  m.payload::text AS payload, m.pinned_definition::text AS pinned_definition, m.concurrency_key, m.rate_key,
  (extract(epoch FROM m.scheduled_for) * 1000)::float8 AS scheduled_ms, (extract(epoch FROM m.fire_at) * 1000)::float8 AS fire_ms,
  (extract(epoch FROM m.queued_at) * 1000)::float8 AS queued_ms, (extract(epoch FROM m.started_at) * 1000)::float8 AS started_ms,
  (extract(epoch FROM m.lease_until) * 1000)::float8 AS lease_ms, (extract(epoch FROM m.created_at) * 1000)::float8 AS created_ms`;

/**
 * The claim in one statement: each requested execution that {@link STARTS_WITHOUT_JUDGEMENT} with a
 * handler this worker offers (`$7`; a pinned run's own) is started — `running`, attempt + 1, the
 * request's `attempt_id`, a lease — the earliest one per exclusive task of the batch (the others
 * are judged: they wait their turn). A row another transaction holds is skipped, not waited for
 * (an edit, an operator's action: the claim reads it and judges). The task's definition comes back
 * only when its version is not the one the worker keeps (`$4`). Requests not started are absent
 * from the answer: the worker reads them and judges.
 */
export const CLAIM_DIRECT = `
  WITH req AS (
    SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::float8[], $4::int[], $5::text[]) AS r(id, attempt_id, released_ms, known_version, worker_id)
  ),
  candidate AS (
    SELECT DISTINCT ON (CASE WHEN e.exclusive THEN e.task_id ELSE e.id END)
      e.id, e.task_id, e.exclusive, e.scheduled_for, e.status, e.attempt, e.fire_at, e.task_version, req.attempt_id, req.released_ms, req.worker_id,
      t.version AS t_version, CASE WHEN t.version = req.known_version THEN NULL ELSE to_jsonb(t)::text END AS t_json
    -- One index lookup per row, whatever the planner thinks of the tables' sizes (OFFSET 0 keeps
    -- each a subquery: a due row is found by its id, never by scanning the rows due).
    FROM req CROSS JOIN LATERAL (SELECT * FROM live_execution x WHERE x.id = req.id OFFSET 0) e
    CROSS JOIN LATERAL (SELECT * FROM task y WHERE y.id = e.task_id OFFSET 0) t
    WHERE ${STARTS_WITHOUT_JUDGEMENT} AND COALESCE(e.pinned_definition->>'handler', t.handler) = ANY($7::text[])
    ORDER BY CASE WHEN e.exclusive THEN e.task_id ELSE e.id END, e.scheduled_for
  ),
  -- Each candidate's row, locked in id order (no waiting: a row held elsewhere is judged instead),
  -- carried with all it needs so that the update joins one row to one row.
  locked AS (
    SELECT c.*, e.started_at AS prev_started_at, e.worker_id AS prev_worker_id FROM candidate c JOIN live_execution e ON e.id = c.id
    ORDER BY e.id FOR UPDATE OF e SKIP LOCKED
  ),
  ${TAKE_RUN_GUARD('locked')},
  moved AS (
    UPDATE live_execution e
    SET status = 'running', attempt = e.attempt + 1, attempt_id = l.attempt_id, worker_id = l.worker_id,
        queued_at = ${queuedAtOnClaimSql('l.released_ms')},
        started_at = statement_timestamp(), heartbeat_at = statement_timestamp(), lease_until = statement_timestamp() + $6 * interval '1 millisecond',
        next_attempt_at = NULL, parked_at = NULL
    FROM locked l
    -- The row as the candidate saw it (a version committed since the snapshot is not started blind).
    WHERE e.id = l.id AND e.status = l.status AND e.attempt = l.attempt AND e.fire_at = l.fire_at AND e.task_version = l.task_version
      AND e.held_at IS NULL AND e.fire_at <= statement_timestamp() AND ${GUARD_TAKEN('e')}
    RETURNING e.*, l.status AS from_status, l.attempt AS prev_attempt, l.prev_started_at, l.prev_worker_id, l.t_version, l.t_json
  ),
  ${FIRST_CLAIM_CTE},
  ${EVENT_CTE_TEXT(`jsonb_build_object('attempt', attempt)`)}
  SELECT ${CLAIMED_COLUMNS}, m.t_version, m.t_json FROM moved m`;

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
 * slot due that has not begun — a backlog run still held for its turn. Such a slot gets no job,
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
 * The handler the execution row `alias` runs, as SQL: the one its pinned definition names (an edit
 * pinned a run in progress), else its task's — the handler whose queue its jobs go to.
 */
export const HANDLER_OF_ROW = (alias: string) =>
  `COALESCE(${alias}.pinned_definition->>'handler', (SELECT t.handler FROM task t WHERE t.id = ${alias}.task_id))`;

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

/** The hand-over on its own, for the tasks `$1` (an end recorded by another statement, or a run whose end looked too early). */
export const HAND_OVER = `
  WITH asked AS (SELECT unnest($1::uuid[]) AS task_id),
  ended AS (SELECT NULL::uuid AS id WHERE false),
  ${handOver('asked', 'ended')}
  SELECT ${HANDED_JSON} AS handed`;
