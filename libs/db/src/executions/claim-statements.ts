import { EVENT_CTE_TEXT, FIRST_CLAIM_CTE, GUARD_TAKEN, TAKE_RUN_GUARD } from './execution-transition.js';
import { earlierSlotDueSql, plannedSql, taskFreeSql } from './predicates.js';
import { CLAIMED_COLUMNS, queuedAtOnClaimSql } from './turn-statements.js';

// The two statements of a worker's claim (see ClaimsRepository), prepared once per connection.

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
    COALESCE(h.holders, '[]'::json) AS holders,
    (e.exclusive AND ${earlierSlotDueSql('e', 'now()')}) AS earlier_due,
    (e.exclusive AND EXISTS (
      SELECT 1 FROM live_execution o
      WHERE o.task_id = e.task_id AND ${plannedSql('o')} AND o.id <> e.id AND o.next_attempt_at IS NOT NULL
    )) AS other_buffered,
    -- The task's scheduled slot before this one: how long a run may last before it overlaps the next.
    CASE WHEN e.exclusive AND h.holders IS NOT NULL THEN (
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
    )) AS holders
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
    SET status = 'running', attempt = e.attempt + 1, attempt_id = req.attempt_id, worker_id = req.worker_id,
        -- Claimed before the leader marked it: the release is recorded here (the history shows it).
        queued_at = ${queuedAtOnClaimSql('req.released_ms')},
        started_at = statement_timestamp(), heartbeat_at = statement_timestamp(), lease_until = statement_timestamp() + $9 * interval '1 millisecond', next_attempt_at = NULL,
        parked_at = NULL
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
  ${FIRST_CLAIM_CTE},
  ${EVENT_CTE_TEXT(`jsonb_build_object('attempt', attempt)`)}
  SELECT req.id AS request_id, req.attempt_id AS request_attempt_id, (l.id IS NULL) AS row_locked, m.id IS NOT NULL AS claimed,
    (m.id IS NULL AND l.exclusive AND l.task_id IS NOT NULL AND l.id NOT IN (SELECT id FROM guarded)) AS contended, ${CLAIMED_COLUMNS}
  FROM req LEFT JOIN locked l ON l.id = req.id LEFT JOIN moved m ON m.id = req.id`;
