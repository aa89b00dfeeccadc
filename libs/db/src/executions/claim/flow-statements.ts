import { AHEAD_COUNTED, QUOTA_KEY_PREFIX } from '@punctual/planning';

// The statements of flow control's claim (see FlowControlRepository), prepared once per connection.

/**
 * The permits of concurrency key `key` held by handlers that run on after their run ended (see
 * `overrun_permit`), beside the key's running runs: a permit whose attempt still runs its row
 * (a timed-out attempt keeps its row `running` a while) is the row's, not counted twice. A
 * namespace's `maxConcurrentRuns` counts the same way, by the key {@link quotaPermitKey} names.
 */
const OVERRUNNING = (key: string) => `(
      SELECT count(*) FROM overrun_permit p
      WHERE p.key = ${key} AND p.until > clock_timestamp()
        AND NOT EXISTS (
          SELECT 1 FROM live_execution r
          WHERE r.id = p.execution_id AND r.attempt_id = p.attempt_id AND r.status = 'running' AND r.lease_until > clock_timestamp()
        )
    )`;

/** The key of a namespace's overrun permits (see `quotaFlowKey`), from the SQL of its name. */
const quotaPermitKey = (namespace: string) => `('${QUOTA_KEY_PREFIX}' || ${namespace})`;

/**
 * The runs that count against namespace `ns`'s `maxConcurrentRuns` (SQL of its name), those of
 * `except` (SQL of a uuid array) aside: its runs running, and its handlers running on after their
 * runs ended, as a concurrency key counts them.
 */
export const quotaRunsInUseSql = (ns: string, except = `'{}'::uuid[]`) => `((
      SELECT count(*) FROM live_execution r
      WHERE r.namespace = ${ns} AND r.status = 'running' AND r.lease_until > clock_timestamp() AND r.id <> ALL(${except})
    ) + ${OVERRUNNING(quotaPermitKey(ns))})`;

/**
 * Everything a batch of flow-controlled claims (same keys) decides by, read after the keys' locks
 * are taken (so it sees every claim of the keys that committed before): the permits in use, the
 * first run held on the keys outside the batch (earlier `fire_at`, due: it goes first) and how many
 * are held ahead of the batch's first claim (`$6`, `$7`), and the starts in the rate key's window, oldest first; the same of
 * the namespace's run quotas (`$8`: its runs running and held on it, its starts in the minute), or null. Instants on the wall clock
 * (`clock_timestamp()`): the transaction's `now()` is from before the lock wait.
 */
export const FLOW_CHECK = `
  WITH held AS (
    SELECT o.id, o.fire_at FROM live_execution o
    WHERE o.concurrency_key = $1 AND o.held_at IS NOT NULL AND o.status IN ('scheduled', 'queued', 'retrying') AND o.id <> ALL($3::uuid[])
      AND CASE WHEN o.status = 'retrying' THEN o.next_attempt_at ELSE o.fire_at END <= clock_timestamp()
    UNION
    SELECT o.id, o.fire_at FROM live_execution o
    WHERE o.rate_key = $2 AND o.held_at IS NOT NULL AND o.status IN ('scheduled', 'queued', 'retrying') AND o.id <> ALL($3::uuid[])
      AND CASE WHEN o.status = 'retrying' THEN o.next_attempt_at ELSE o.fire_at END <= clock_timestamp()
  ),
  qheld AS (
    SELECT o.id, o.fire_at FROM live_execution o
    WHERE o.quota_namespace = $8 AND o.held_at IS NOT NULL AND o.status IN ('scheduled', 'queued', 'retrying') AND o.id <> ALL($3::uuid[])
      AND CASE WHEN o.status = 'retrying' THEN o.next_attempt_at ELSE o.fire_at END <= clock_timestamp()
  )
  SELECT (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS now_ms,
    CASE WHEN $1::text IS NULL THEN 0 ELSE (
      SELECT count(*) FROM live_execution r
      WHERE r.concurrency_key = $1 AND r.status = 'running' AND r.lease_until > clock_timestamp() AND r.id <> ALL($3::uuid[])
    ) + ${OVERRUNNING('$1')} END::int AS running,
    (SELECT json_build_object('fireMs', (extract(epoch FROM h.fire_at) * 1000)::float8, 'id', h.id) FROM held h ORDER BY h.fire_at, h.id LIMIT 1) AS first_held,
    (SELECT count(*) FROM (SELECT 1 FROM held h WHERE (h.fire_at, h.id) < ($6::timestamptz, $7::uuid) LIMIT ${AHEAD_COUNTED}) a)::int AS held,
    CASE WHEN $2::text IS NULL THEN '{}'::float8[] ELSE ARRAY(
      SELECT ms FROM (
        SELECT (extract(epoch FROM f.at) * 1000)::float8 AS ms FROM flow_start f
        WHERE f.key = $2 AND f.at > clock_timestamp() - $5::float8 * interval '1 millisecond' ORDER BY f.at DESC LIMIT $4::int
      ) w ORDER BY ms
    ) END AS window_ms,
    CASE WHEN $8::text IS NULL THEN NULL ELSE json_build_object(
      'running', ${quotaRunsInUseSql('$8', '$3::uuid[]')},
      'first_held', (SELECT json_build_object('fireMs', (extract(epoch FROM h.fire_at) * 1000)::float8, 'id', h.id) FROM qheld h ORDER BY h.fire_at, h.id LIMIT 1),
      'held', (SELECT count(*) FROM (SELECT 1 FROM qheld h WHERE (h.fire_at, h.id) < ($6::timestamptz, $7::uuid) LIMIT ${AHEAD_COUNTED}) a),
      'window_ms', ARRAY(
        SELECT ms FROM (
          SELECT (extract(epoch FROM f.at) * 1000)::float8 AS ms FROM quota_start f
          WHERE f.namespace = $8 AND f.at > clock_timestamp() - $10::float8 * interval '1 millisecond' ORDER BY f.at DESC LIMIT $9::int
        ) w ORDER BY ms
      )
    ) END AS quota`;

/**
 * The end of a locked claim, in one statement: the claims started (`$3`) get their keys (and their
 * namespace, `$7`, under its run quotas) recorded and their starts put in the rate key's window (old
 * starts go by the retention rules, see HistoryKeeper) and, with a `maxRunsPerMinute` (`$8`), in the quota's; the claims held
 * (`$4`…) are marked held (first when kept) with the keys they wait on — the namespace only for those
 * held on its quota (`$9`) — only while as the judgement read them.
 */
export const FLOW_FINISH = `
  WITH started AS (INSERT INTO flow_start (key, at, execution_id) SELECT $2, clock_timestamp(), id FROM unnest($3::uuid[]) AS u(id) WHERE $2::text IS NOT NULL),
  quota_started AS (INSERT INTO quota_start (namespace, at, execution_id) SELECT $7, clock_timestamp(), id FROM unnest($3::uuid[]) AS u(id) WHERE $8::boolean),
  keyed AS (
    UPDATE live_execution SET concurrency_key = $1, rate_key = $2, quota_namespace = $7, held_at = NULL,
      flow_waited_ms = CASE WHEN held_at IS NULL THEN flow_waited_ms ELSE (extract(epoch FROM clock_timestamp() - held_at) * 1000)::int END
    WHERE id = ANY($3::uuid[]))
  UPDATE live_execution e SET held_at = COALESCE(e.held_at, clock_timestamp()), concurrency_key = $1, rate_key = $2,
    quota_namespace = CASE WHEN h.on_quota THEN $7 END
  FROM unnest($4::uuid[], $5::execution_status[], $6::int[], $9::boolean[]) AS h(id, status, attempt, on_quota)
  WHERE e.id = h.id AND e.status = h.status AND e.attempt = h.attempt`;

/**
 * The look before the lock, for many claims of any keys in one statement: a claim whose key is
 * full — no permit free, the rate window full, or a run already held on its keys ahead of it — is
 * marked held there and then (holding never needs the lock: it is always safe, and a permit freed
 * meanwhile wakes it) — and so is one over its namespace's run quotas (`$10`…: no permit, the minute
 * full, or a run held on them ahead of it); the others may start and go on to the locked claim. Returns, per claim,
 * whether it was held, and what its hint needs: the runs held on its keys, its rate window.
 */
export const FLOW_HOLD_IF_FULL = `
  WITH req AS (
    SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::int[], $5::int[], $6::float8[], $7::timestamptz[], $8::execution_status[], $9::int[],
        $10::text[], $11::int[], $12::int[])
      WITH ORDINALITY AS r(id, ckey, rkey, climit, rlimit, window_ms, fire_at, status, attempt, qns, qclimit, qrlimit, n)
  ),
  qkeys AS (SELECT DISTINCT qns AS ns, qrlimit FROM req WHERE qns IS NOT NULL),
  qrunning AS (
    SELECT k.ns, ${quotaRunsInUseSql('k.ns', '$1::uuid[]')}::int AS n
    FROM (SELECT DISTINCT ns FROM qkeys) k
  ),
  qwindows AS (
    SELECT k.ns, k.qrlimit, ARRAY(
      SELECT ms FROM (
        SELECT (extract(epoch FROM f.at) * 1000)::float8 AS ms FROM quota_start f
        WHERE f.namespace = k.ns AND f.at > clock_timestamp() - $13::float8 * interval '1 millisecond' ORDER BY f.at DESC LIMIT COALESCE(k.qrlimit, 0)
      ) w ORDER BY ms) AS starts
    FROM qkeys k
  ),
  ckeys AS (SELECT DISTINCT ckey AS key FROM req WHERE ckey IS NOT NULL),
  rkeys AS (SELECT DISTINCT rkey AS key, rlimit, window_ms FROM req WHERE rkey IS NOT NULL),
  running AS (
    SELECT k.key, ((SELECT count(*) FROM live_execution x
      WHERE x.concurrency_key = k.key AND x.status = 'running' AND x.lease_until > clock_timestamp() AND x.id <> ALL($1::uuid[])) + ${OVERRUNNING('k.key')})::int AS n
    FROM ckeys k
  ),
  windows AS (
    SELECT k.key, k.rlimit, k.window_ms, ARRAY(
      SELECT ms FROM (
        SELECT (extract(epoch FROM f.at) * 1000)::float8 AS ms FROM flow_start f
        WHERE f.key = k.key AND f.at > clock_timestamp() - k.window_ms * interval '1 millisecond' ORDER BY f.at DESC LIMIT k.rlimit
      ) w ORDER BY ms) AS starts
    FROM rkeys k
  ),
  verdict AS (
    SELECT r.id, r.n, r.status, r.attempt, r.ckey, r.rkey,
      COALESCE((SELECT c.n FROM running c WHERE c.key = r.ckey) >= r.climit, false) AS cfull,
      COALESCE((SELECT cardinality(w.starts) FROM windows w WHERE w.key = r.rkey AND w.rlimit = r.rlimit AND w.window_ms = r.window_ms) >= r.rlimit, false) AS rfull,
      ahead.n > 0 AS behind, ahead.n AS held_count,
      COALESCE((SELECT w.starts FROM windows w WHERE w.key = r.rkey AND w.rlimit = r.rlimit AND w.window_ms = r.window_ms), '{}'::float8[]) AS window_ms,
      r.qns,
      COALESCE((SELECT c.n FROM qrunning c WHERE c.ns = r.qns) >= r.qclimit, false) AS qcfull,
      COALESCE((SELECT cardinality(w.starts) FROM qwindows w WHERE w.ns = r.qns AND w.qrlimit = r.qrlimit) >= r.qrlimit, false) AS qrfull,
      qahead.n > 0 AS qbehind, qahead.n AS q_held_count,
      COALESCE((SELECT w.starts FROM qwindows w WHERE w.ns = r.qns AND w.qrlimit = r.qrlimit), '{}'::float8[]) AS q_window_ms
    FROM req r
    -- The runs already held on its keys ahead of it, each key through its own index.
    CROSS JOIN LATERAL (
      SELECT count(*)::int AS n FROM (
        SELECT o.id FROM live_execution o
        WHERE r.ckey IS NOT NULL AND o.concurrency_key = r.ckey AND o.held_at IS NOT NULL AND o.status IN ('scheduled', 'queued', 'retrying')
          AND o.fire_at <= r.fire_at AND (o.fire_at, o.id) < (r.fire_at, r.id) AND o.id <> ALL($1::uuid[])
          AND CASE WHEN o.status = 'retrying' THEN o.next_attempt_at ELSE o.fire_at END <= clock_timestamp()
        UNION
        SELECT o.id FROM live_execution o
        WHERE r.rkey IS NOT NULL AND o.rate_key = r.rkey AND o.held_at IS NOT NULL AND o.status IN ('scheduled', 'queued', 'retrying')
          AND o.fire_at <= r.fire_at AND (o.fire_at, o.id) < (r.fire_at, r.id) AND o.id <> ALL($1::uuid[])
          AND CASE WHEN o.status = 'retrying' THEN o.next_attempt_at ELSE o.fire_at END <= clock_timestamp()
        LIMIT ${AHEAD_COUNTED}
      ) h
    ) ahead
    -- The runs already held on its namespace's run quotas ahead of it.
    CROSS JOIN LATERAL (
      SELECT count(*)::int AS n FROM (
        SELECT 1 FROM live_execution o
        WHERE r.qns IS NOT NULL AND o.quota_namespace = r.qns AND o.held_at IS NOT NULL AND o.status IN ('scheduled', 'queued', 'retrying')
          AND o.fire_at <= r.fire_at AND (o.fire_at, o.id) < (r.fire_at, r.id) AND o.id <> ALL($1::uuid[])
          AND CASE WHEN o.status = 'retrying' THEN o.next_attempt_at ELSE o.fire_at END <= clock_timestamp()
        LIMIT ${AHEAD_COUNTED}
      ) h
    ) qahead
  ),
  marked AS (
    UPDATE live_execution e SET held_at = COALESCE(e.held_at, clock_timestamp()), concurrency_key = v.ckey, rate_key = v.rkey,
      quota_namespace = CASE WHEN v.qcfull OR v.qrfull OR v.qbehind THEN v.qns END
    FROM verdict v WHERE e.id = v.id AND e.status = v.status AND e.attempt = v.attempt
      AND (v.cfull OR v.rfull OR v.behind OR v.qcfull OR v.qrfull OR v.qbehind)
    RETURNING e.id
  )
  SELECT v.n::int AS n, v.cfull, v.rfull, v.behind, v.held_count, v.window_ms, (v.id IN (SELECT id FROM marked)) AS marked,
    v.qcfull, v.qrfull, v.qbehind, v.q_held_count, v.q_window_ms,
    (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS now_ms
  FROM verdict v ORDER BY v.n`;
