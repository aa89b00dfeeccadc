import { EVENT_CTE_TEXT } from '../execution-transition.js';
import { earlierSlotDueSql, lateSql, plannedSql, runInProgressSql, taskFreeSql } from '../predicates.js';

// The statements of a worker's claim (see ClaimsRepository), prepared once per connection: the
// claim in one statement of what needs no judgement (CLAIM_DIRECT), and for the rest the read the
// judgement weighs (CLAIM_READ) and the write of what it said to start (CLAIM_WRITE). Both writes
// start an attempt with START_ATTEMPT and write its history with CLAIM_HISTORY.

/**
 * A first attempt `e` of task `t` that the judgement does not skip or leave to the misfire policy
 * (rule 3 of `judgeClaim`): a manual run, or its task not paused, the row on its task's plan (or
 * pinned by an edit), and a scheduled slot not late.
 */
export const FIRST_ATTEMPT_STANDS = `(e.trigger = 'manual' OR (
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
 * The first attempt's claim, written down before a second attempt replaces it: the happy path reads
 * it back from the row's `started_at` and `worker_id` (see {@link EXECUTION_HISTORY}), which the
 * next claim overwrites. A CTE after `moved` (the claimed rows, with `prev_attempt`,
 * `prev_started_at` and `prev_worker_id` as they were before the claim).
 */
const FIRST_CLAIM_CTE = `
  first_claim AS (
    INSERT INTO execution_event (execution_id, scheduled_for, from_status, to_status, at, worker_id, detail)
    SELECT m.id, m.scheduled_for, CASE WHEN m.queued_at IS NOT NULL THEN 'queued' ELSE 'scheduled' END::execution_status, 'running',
           m.prev_started_at, m.prev_worker_id, jsonb_build_object('attempt', 1)
    FROM moved m
    WHERE m.prev_attempt = 1 AND m.prev_started_at IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM live_execution_event ev WHERE ev.execution_id = m.id AND ev.to_status = 'running' AND ev.detail->>'attempt' = '1')
  )`;

/**
 * The no-overlap guard (`task_run_guard`) of the exclusive tasks of `source` — a CTE of rows about to
 * start (`id`, `task_id`, `exclusive`, `scheduled_for`; per task its earliest slot tries) — as two
 * CTEs: `guarded` returns the ids that took it. An execution takes its task's guard over from the
 * holder this statement's snapshot shows, and only if that holder is not running (or is itself); a
 * claim of another slot of the task that took the guard meanwhile — committed or not, whatever the
 * partition of its slot — leaves it unchanged (a compare-and-set), and this one is judged again.
 * What `UNIQUE (task_id) WHERE running AND exclusive` was before the table was partitioned (a unique
 * index of a partitioned table holds only within a partition).
 */
const TAKE_RUN_GUARD = (source: string) => `
  guard_seen AS (
    SELECT DISTINCT ON (s.task_id) s.task_id, s.id, g.execution_id AS holder
    FROM ${source} s LEFT JOIN task_run_guard g ON g.task_id = s.task_id
    WHERE s.exclusive AND s.task_id IS NOT NULL
    ORDER BY s.task_id, s.scheduled_for
  ),
  guarded AS (
    INSERT INTO task_run_guard AS g (task_id, execution_id, taken_from)
    SELECT q.task_id, q.id, q.holder FROM guard_seen q
    WHERE q.holder IS NULL OR q.holder = q.id
       OR NOT EXISTS (SELECT 1 FROM live_execution r WHERE r.id = q.holder AND r.status = 'running')
    ON CONFLICT (task_id) DO UPDATE SET execution_id = EXCLUDED.execution_id, taken_from = EXCLUDED.taken_from
      WHERE g.execution_id IS NOT DISTINCT FROM EXCLUDED.taken_from
    RETURNING g.execution_id AS id
  )`;

/** `e` may start as far as the guard goes: it is not exclusive, or it took its task's guard (see {@link TAKE_RUN_GUARD}). */
const GUARD_TAKEN = (e: string) =>
  `(NOT ${e}.exclusive OR ${e}.task_id IS NULL OR ${e}.id IN (SELECT id FROM guarded))`;

/**
 * The SET of both claims, over `e`, the row claimed: `running` under the attempt of `source` (its
 * `attempt_id`, `worker_id` and `released_ms`), attempt + 1, a lease of `leaseMs` (a parameter), no
 * retry pending and no park. A job claimed before the leader marked its release records the
 * release it carried (the history shows it).
 */
const START_ATTEMPT = (source: string, leaseMs: string) => `
    status = 'running', attempt = e.attempt + 1, attempt_id = ${source}.attempt_id, worker_id = ${source}.worker_id,
    queued_at = ${queuedAtOnClaimSql(`${source}.released_ms`)},
    started_at = statement_timestamp(), heartbeat_at = statement_timestamp(),
    lease_until = statement_timestamp() + ${leaseMs} * interval '1 millisecond', next_attempt_at = NULL, parked_at = NULL`;

/** The history of both claims, as CTEs after `moved`: the first attempt written down (see FIRST_CLAIM_CTE) and the start. */
const CLAIM_HISTORY = `${FIRST_CLAIM_CTE},
  ${EVENT_CTE_TEXT(`jsonb_build_object('attempt', attempt)`)}`;

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
  -- Each candidate's row, locked in id order (no waiting: a row locked elsewhere is judged instead),
  -- carried with all it needs so that the update joins one row to one row.
  locked AS (
    SELECT c.*, e.started_at AS prev_started_at, e.worker_id AS prev_worker_id FROM candidate c JOIN live_execution e ON e.id = c.id
    ORDER BY e.id FOR UPDATE OF e SKIP LOCKED
  ),
  ${TAKE_RUN_GUARD('locked')},
  moved AS (
    UPDATE live_execution e
    SET ${START_ATTEMPT('l', '$6')}
    FROM locked l
    -- The row as the candidate saw it (a version committed since the snapshot is not started blind).
    WHERE e.id = l.id AND e.status = l.status AND e.attempt = l.attempt AND e.fire_at = l.fire_at AND e.task_version = l.task_version
      AND e.held_at IS NULL AND e.fire_at <= statement_timestamp() AND ${GUARD_TAKEN('e')}
    RETURNING e.*, l.status AS from_status, l.attempt AS prev_attempt, l.prev_started_at, l.prev_worker_id, l.t_version, l.t_json
  ),
  ${CLAIM_HISTORY}
  SELECT ${CLAIMED_COLUMNS}, m.t_version, m.t_json FROM moved m`;

/**
 * The read of the claims the one-statement claim did not start (`$1` ids, `$2` the version of each
 * one's task the worker keeps, 0 when none): each execution, its task (the definition only when
 * the worker does not keep its version), the task's exclusive runs in progress (their first start
 * from the history once a later attempt replaced `started_at`), whether an earlier slot is due and
 * not started, whether another slot is buffered, the task's scheduled slot before it (when a run is in progress). No locks: the write re-checks what it relies on.
 */
export const CLAIM_READ = `
  SELECT e.id, e.task_id, e.task_name, e.status, e.attempt, e.attempt_id, e.trigger, e.exclusive, e.task_version,
    e.pinned_definition IS NOT NULL AS pinned,
    e.pinned_definition->>'handler' AS pinned_handler, (e.pinned_definition->>'maxAttempts')::int AS pinned_max_attempts,
    -- Instants as epoch milliseconds: a number the driver reads for free, where a timestamp costs a parse.
    (extract(epoch FROM e.scheduled_for) * 1000)::float8 AS scheduled_ms, (extract(epoch FROM e.fire_at) * 1000)::float8 AS fire_ms,
    (extract(epoch FROM e.lease_until) * 1000)::float8 AS lease_ms, (extract(epoch FROM e.next_attempt_at) * 1000)::float8 AS next_attempt_ms,
    (extract(epoch FROM e.held_at) * 1000)::float8 AS held_ms,
    (extract(epoch FROM now()) * 1000)::float8 AS now_ms,
    -- What the judgement reads of the task, and the whole definition only when this worker does not keep its version.
    t.id AS t_id, t.version AS t_version, t.status AS t_status, t.plan_version AS t_plan_version, t.overlap AS t_overlap,
    t.max_delay_ms AS t_max_delay_ms, t.max_attempts AS t_max_attempts,
    CASE WHEN t.version = req.known_version THEN NULL ELSE to_jsonb(t)::text END AS t_json,
    COALESCE(h.runs_in_progress, '[]'::json) AS runs_in_progress,
    (e.exclusive AND ${earlierSlotDueSql('e', 'now()')}) AS earlier_due,
    (e.exclusive AND EXISTS (
      SELECT 1 FROM live_execution o
      WHERE o.task_id = e.task_id AND ${plannedSql('o')} AND o.id <> e.id AND o.next_attempt_at IS NOT NULL
    )) AS other_buffered,
    -- The task's scheduled slot before this one: how long a run may last before it overlaps the next.
    CASE WHEN e.exclusive AND h.runs_in_progress IS NOT NULL THEN (
      SELECT (extract(epoch FROM o.scheduled_for) * 1000)::float8 FROM live_execution o
      WHERE o.task_id = e.task_id AND o.scheduled_for < e.scheduled_for AND o.trigger = 'schedule'
      ORDER BY o.scheduled_for DESC LIMIT 1
    ) END AS previous_slot_ms,
    -- The run quotas of the task's namespace, when it has any: its claim goes through flow control.
    (SELECT json_build_object('namespace', n.name, 'concurrency', n.max_concurrent_runs, 'perMinute', n.max_runs_per_minute)
      FROM namespace n WHERE n.name = t.namespace AND (n.max_concurrent_runs IS NOT NULL OR n.max_runs_per_minute IS NOT NULL)) AS quota
  FROM unnest($1::uuid[], $2::int[]) AS req(id, known_version)
  CROSS JOIN LATERAL (SELECT * FROM live_execution x WHERE x.id = req.id OFFSET 0) e
  -- One index lookup per row, whatever the planner thinks of the tables' sizes (OFFSET 0 keeps it a subquery).
  LEFT JOIN LATERAL (SELECT * FROM task y WHERE y.id = e.task_id OFFSET 0) t ON true
  LEFT JOIN LATERAL (
    SELECT json_agg(json_build_object(
      'id', r.id, 'running', r.status = 'running', 'fireAt', r.fire_at, 'releasedAt', r.queued_at,
      'firstStartedAt', LEAST(r.started_at, (SELECT min(ev.at) FROM live_execution_event ev WHERE ev.execution_id = r.id AND ev.to_status = 'running'))
    )) AS runs_in_progress
    FROM (
      SELECT * FROM live_execution x WHERE x.task_id = e.task_id AND x.status = 'running' AND x.exclusive AND x.id <> e.id
      UNION ALL
      SELECT * FROM live_execution x WHERE x.task_id = e.task_id AND x.status = 'retrying' AND x.exclusive AND x.id <> e.id
    ) r
    WHERE e.exclusive
  ) h ON true`;

/**
 * The write: every requested row is locked without waiting (`SKIP LOCKED`: a transaction of the
 * API or the leader holding it never stalls the claims batched with it) and moved to `running`
 * only if it is still exactly as the judgement read it — state, attempt, `fire_at`, and, when the
 * judgement found the task free, still no run in progress and no earlier slot due — and by
 * Postgres' clock its `fire_at` has come, and its task is still on the plan version read. An
 * edit locks every unfinished row of its task before it changes anything, so a claim and an edit
 * of one task serialize: the claim commits first (and the edit pins the definition it runs
 * under), or the claim finds the row locked or changed and reads again. Its instants are the
 * statement's own (`statement_timestamp()`: alone, the same as `now()`; inside flow control's
 * transaction, later than its start — after the checks it relies on).
 */
export const CLAIM_WRITE = `
  WITH req AS (
    SELECT DISTINCT ON (id) * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::execution_status[], $5::int[], $6::timestamptz[], $7::int[], $8::float8[], $10::bool[])
      AS r(id, attempt_id, worker_id, status, attempt, fire_at, plan_version, released_ms, free)
    ORDER BY id
  ),
  locked AS (
    SELECT e.id, e.task_id, e.exclusive, e.scheduled_for, e.status, e.attempt, e.started_at, e.worker_id
    FROM live_execution e WHERE e.id = ANY($1::uuid[]) ORDER BY e.id FOR UPDATE SKIP LOCKED
  ),
  ${TAKE_RUN_GUARD('locked')},
  moved AS (
    UPDATE live_execution e
    SET ${START_ATTEMPT('req', '$9')}
    FROM req JOIN locked USING (id)
    WHERE e.id = ANY($1::uuid[]) AND e.id = req.id AND e.status = req.status AND e.attempt = req.attempt AND e.fire_at = req.fire_at AND e.fire_at <= statement_timestamp()
      AND (e.status <> 'running' OR e.lease_until < statement_timestamp())
      AND EXISTS (SELECT 1 FROM task t WHERE t.id = e.task_id AND t.plan_version = req.plan_version)
      -- What a judgement of "free" relied on (the read may be a little old): still no other run of
      -- the task in progress, and still no earlier slot of it due.
      AND (NOT req.free OR (
        ${taskFreeSql('e', 'statement_timestamp()')}))
      AND ${GUARD_TAKEN('e')}
    RETURNING e.*, locked.status AS from_status, locked.attempt AS prev_attempt, locked.started_at AS prev_started_at, locked.worker_id AS prev_worker_id
  ),
  ${CLAIM_HISTORY}
  SELECT req.id AS request_id, req.attempt_id AS request_attempt_id, (l.id IS NULL) AS row_locked, m.id IS NOT NULL AS claimed,
    (m.id IS NULL AND l.exclusive AND l.task_id IS NOT NULL AND l.id NOT IN (SELECT id FROM guarded)) AS contended, ${CLAIMED_COLUMNS}
  FROM req LEFT JOIN locked l ON l.id = req.id LEFT JOIN moved m ON m.id = req.id`;
