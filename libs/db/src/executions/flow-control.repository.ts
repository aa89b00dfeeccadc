import { Injectable } from '@nestjs/common';
import type pg from 'pg';
import { PrismaService } from '../prisma.service.js';
import { ClaimsRepository, type ClaimWrite, type ClaimWriteOutcome } from './claims.repository.js';

/** A task's flow control (DESIGN §5), as its policy says. */
export interface FlowPolicy {
  concurrency: { key: string; limit: number } | null;
  rate: { key: string; limit: number; perMs: number } | null;
}

/**
 * - `claimed` (and the other write outcomes): as a plain claim's write; `roomLeft`: the key had
 *   room for more after it (a run held behind it may go now).
 * - `held`: a key is at its limit, or an earlier run waits on it: the run is marked held and comes
 *   back — after `retryInMs` when the rate window says when, or when a run of `key` ends or starts.
 *   `ahead`: runs held before it on its keys (200 at most counted).
 */
export type FlowClaimOutcome = (ClaimWriteOutcome & { roomLeft?: boolean }) | { kind: 'held'; key: string; retryInMs: number | null; ahead: number };
/** The busiest keys: runs holding a permit (`running`) and runs held back (`waiting`). */
export interface FlowKeyLoad {
  key: string;
  running: number;
  waiting: number;
}

/**
 * A start counts in its key's window this much longer than `per` (5 %, at most 50 ms): between the
 * claim's commit and the far end seeing the request lie a few milliseconds that vary from run to
 * run, and without the margin two starts a window apart at the claim could land inside one window
 * at the far end.
 */
export function rateWindowMs(perMs: number): number {
  return perMs + Math.min(50, Math.floor(perMs / 20));
}

/**
 * Flow-controlled claim statements of a process in flight at once, each on a connection of its own
 * (the process's pool has ten): claims of many keys never take the pool from the others.
 */
const FLOW_CONNECTIONS = 3;

/** At most `width` tasks at a time, in arrival order. */
export class Semaphore {
  private running = 0;
  private readonly queue: (() => void)[] = [];

  constructor(private readonly width: number) {}

  async run<T>(task: () => Promise<T>): Promise<T> {
    // A place given back goes straight to the next in line: no newcomer slips in between.
    if (this.running >= this.width) await new Promise<void>((resolve) => this.queue.push(resolve));
    else this.running += 1;
    try {
      return await task();
    } finally {
      const next = this.queue.shift();
      if (next) next();
      else this.running -= 1;
    }
  }
}

/** Lanes remembered as having had room (forgotten all at once past this many). */
const ROOMY_LANES_KEPT = 10_000;

/** Held runs counted ahead of one (to spread their returns); beyond this, "many". */
const AHEAD_COUNTED = 200;

/**
 * Everything a batch of flow-controlled claims (same keys) decides by, read after the keys' locks
 * are taken (so it sees every claim of the keys that committed before): the permits in use, the
 * first run held on the keys outside the batch (earlier `fire_at`, due: it goes first) and how many
 * are held ahead of the batch's first claim (`$6`, `$7`), and the starts in the rate key's window, oldest first. Instants on the wall clock
 * (`clock_timestamp()`): the transaction's `now()` is from before the lock wait.
 */
const FLOW_CHECK = `
  WITH held AS (
    SELECT o.id, o.fire_at FROM task_execution o
    WHERE o.concurrency_key = $1 AND o.held_at IS NOT NULL AND o.status IN ('scheduled', 'queued', 'retrying') AND o.id <> ALL($3::uuid[])
      AND CASE WHEN o.status = 'retrying' THEN o.next_attempt_at ELSE o.fire_at END <= clock_timestamp()
    UNION
    SELECT o.id, o.fire_at FROM task_execution o
    WHERE o.rate_key = $2 AND o.held_at IS NOT NULL AND o.status IN ('scheduled', 'queued', 'retrying') AND o.id <> ALL($3::uuid[])
      AND CASE WHEN o.status = 'retrying' THEN o.next_attempt_at ELSE o.fire_at END <= clock_timestamp()
  )
  SELECT (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS now_ms,
    CASE WHEN $1::text IS NULL THEN 0 ELSE (
      SELECT count(*) FROM task_execution r
      WHERE r.concurrency_key = $1 AND r.status = 'running' AND r.lease_until > clock_timestamp() AND r.id <> ALL($3::uuid[])
    ) END::int AS running,
    (SELECT json_build_object('fireMs', (extract(epoch FROM h.fire_at) * 1000)::float8, 'id', h.id) FROM held h ORDER BY h.fire_at, h.id LIMIT 1) AS first_held,
    (SELECT count(*) FROM (SELECT 1 FROM held h WHERE (h.fire_at, h.id) < ($6::timestamptz, $7::uuid) LIMIT ${AHEAD_COUNTED}) a)::int AS held,
    CASE WHEN $2::text IS NULL THEN '{}'::float8[] ELSE ARRAY(
      SELECT ms FROM (
        SELECT (extract(epoch FROM f.at) * 1000)::float8 AS ms FROM flow_start f
        WHERE f.key = $2 AND f.at > clock_timestamp() - $5::float8 * interval '1 millisecond' ORDER BY f.at DESC LIMIT $4::int
      ) w ORDER BY ms
    ) END AS window_ms`;

/**
 * The end of a locked claim, in one statement: the claims started (`$3`) get their keys recorded
 * and their starts put in the rate key's window (a day's old starts pruned); the claims held (`$4`…)
 * are marked held (first when kept) with the keys they wait on, only while as the judgement read them.
 */
const FLOW_FINISH = `
  WITH started AS (INSERT INTO flow_start (key, at, execution_id) SELECT $2, clock_timestamp(), id FROM unnest($3::uuid[]) AS u(id) WHERE $2::text IS NOT NULL),
  pruned AS (DELETE FROM flow_start WHERE $2::text IS NOT NULL AND cardinality($3::uuid[]) > 0 AND key = $2 AND at < clock_timestamp() - interval '1 day'),
  keyed AS (UPDATE task_execution SET concurrency_key = $1, rate_key = $2, held_at = NULL WHERE id = ANY($3::uuid[]))
  UPDATE task_execution e SET held_at = COALESCE(e.held_at, clock_timestamp()), concurrency_key = $1, rate_key = $2
  FROM unnest($4::uuid[], $5::execution_status[], $6::int[]) AS h(id, status, attempt)
  WHERE e.id = h.id AND e.status = h.status AND e.attempt = h.attempt`;

/**
 * The look before the lock, for many claims of any keys in one statement: a claim whose key is
 * full — no permit free, the rate window full, or a run already held on its keys ahead of it — is
 * marked held there and then (holding never needs the lock: it is always safe, and a permit freed
 * meanwhile wakes it); the others may start and go on to the locked claim. Returns, per claim,
 * whether it was held, and what its hint needs: the runs held on its keys, its rate window.
 */
const FLOW_HOLD_IF_FULL = `
  WITH req AS (
    SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::int[], $5::int[], $6::float8[], $7::timestamptz[], $8::execution_status[], $9::int[])
      WITH ORDINALITY AS r(id, ckey, rkey, climit, rlimit, window_ms, fire_at, status, attempt, n)
  ),
  ckeys AS (SELECT DISTINCT ckey AS key FROM req WHERE ckey IS NOT NULL),
  rkeys AS (SELECT DISTINCT rkey AS key, rlimit, window_ms FROM req WHERE rkey IS NOT NULL),
  running AS (
    SELECT k.key, (SELECT count(*) FROM task_execution x
      WHERE x.concurrency_key = k.key AND x.status = 'running' AND x.lease_until > clock_timestamp() AND x.id <> ALL($1::uuid[]))::int AS n
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
      COALESCE((SELECT w.starts FROM windows w WHERE w.key = r.rkey AND w.rlimit = r.rlimit AND w.window_ms = r.window_ms), '{}'::float8[]) AS window_ms
    FROM req r
    -- The runs already held on its keys ahead of it, each key through its own index.
    CROSS JOIN LATERAL (
      SELECT count(*)::int AS n FROM (
        SELECT o.id FROM task_execution o
        WHERE r.ckey IS NOT NULL AND o.concurrency_key = r.ckey AND o.held_at IS NOT NULL AND o.status IN ('scheduled', 'queued', 'retrying')
          AND o.fire_at <= r.fire_at AND (o.fire_at, o.id) < (r.fire_at, r.id) AND o.id <> ALL($1::uuid[])
          AND CASE WHEN o.status = 'retrying' THEN o.next_attempt_at ELSE o.fire_at END <= clock_timestamp()
        UNION
        SELECT o.id FROM task_execution o
        WHERE r.rkey IS NOT NULL AND o.rate_key = r.rkey AND o.held_at IS NOT NULL AND o.status IN ('scheduled', 'queued', 'retrying')
          AND o.fire_at <= r.fire_at AND (o.fire_at, o.id) < (r.fire_at, r.id) AND o.id <> ALL($1::uuid[])
          AND CASE WHEN o.status = 'retrying' THEN o.next_attempt_at ELSE o.fire_at END <= clock_timestamp()
        LIMIT ${AHEAD_COUNTED}
      ) h
    ) ahead
  ),
  marked AS (
    UPDATE task_execution e SET held_at = COALESCE(e.held_at, clock_timestamp()), concurrency_key = v.ckey, rate_key = v.rkey
    FROM verdict v WHERE e.id = v.id AND e.status = v.status AND e.attempt = v.attempt AND (v.cfull OR v.rfull OR v.behind)
    RETURNING e.id
  )
  SELECT v.n::int AS n, v.cfull, v.rfull, v.behind, v.held_count, v.window_ms, (v.id IN (SELECT id FROM marked)) AS marked,
    (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS now_ms
  FROM verdict v ORDER BY v.n`;

/** `(fire_at, id)` order, as Postgres sorts the held runs of a key (a uuid compares as its lower-case text). */
const before = (a: { fireMs: number; id: string }, b: { fireMs: number; id: string }) => a.fireMs < b.fireMs || (a.fireMs === b.fireMs && a.id.toLowerCase() < b.id.toLowerCase());

/** What {@link FLOW_CHECK} reads. */
interface FlowCheck {
  now_ms: number;
  running: number;
  first_held: { fireMs: number; id: string } | null;
  held: number;
  window_ms: number[];
}

interface Placed {
  w: ClaimWrite;
  /** Its place in the batch as given. */
  i: number;
  fireMs: number;
  id: string;
}

/** Which claims of a batch start (`going`, in order) and which are held, and the room the keys had. */
interface BatchPlan {
  going: Placed[];
  waiting: Placed[];
  permits: number;
  starts: number;
}

/** The claims of a batch in the order they go, `(fire_at, id)`. */
function inOrder(writes: ClaimWrite[]): Placed[] {
  return writes.map((w, i) => ({ w, i, fireMs: w.seen.fireAt.getTime(), id: w.id })).sort((a, b) => (before(a, b) ? -1 : before(b, a) ? 1 : 0));
}

function planBatch(check: FlowCheck, writes: ClaimWrite[], flow: FlowPolicy): BatchPlan {
  // Only those before the first run already held may go at all.
  const order = inOrder(writes);
  const permits = flow.concurrency ? Math.max(0, flow.concurrency.limit - check.running) : Number.POSITIVE_INFINITY;
  const starts = flow.rate ? Math.max(0, flow.rate.limit - check.window_ms.length) : Number.POSITIVE_INFINITY;
  const firstHeld = check.first_held;
  const mayGo = firstHeld ? order.findIndex((o) => !before(o, firstHeld)) : -1;
  const eligible = mayGo === -1 ? order.length : mayGo;
  const going = order.slice(0, Math.min(eligible, permits, starts));
  return { going, waiting: order.slice(going.length), permits, starts };
}

/**
 * The held outcomes of a plan, into `outcomes`: a run waiting for a permit (or behind runs that
 * wait for one) is woken when a run of the key ends or starts; one waiting on the rate window is
 * told when the start `limit` back from its place leaves the window (this batch's starts counted).
 */
function heldOutcomes(check: FlowCheck, plan: BatchPlan, claimed: string[], flow: FlowPolicy, outcomes: FlowClaimOutcome[]): FlowClaimOutcome[] {
  const windowMs = flow.rate ? rateWindowMs(flow.rate.perMs) : 0;
  const window = [...check.window_ms, ...claimed.map(() => check.now_ms)];
  const perStart = flow.rate ? windowMs / flow.rate.limit : 0;
  plan.waiting.forEach((o, j) => {
    const ahead = Math.min(AHEAD_COUNTED, check.held + j);
    const onPermit = flow.concurrency !== null && (plan.going.length + j >= plan.permits || flow.rate === null || plan.permits <= plan.starts);
    if (onPermit) {
      outcomes[o.i] = { kind: 'held', key: flow.concurrency!.key, retryInMs: null, ahead };
      return;
    }
    const at = window.length - flow.rate!.limit + j + check.held;
    const freeAt = at < 0 ? check.now_ms + perStart : at < window.length ? window[at]! + windowMs : check.now_ms + windowMs + (at - window.length + 1) * perStart;
    outcomes[o.i] = { kind: 'held', key: flow.rate!.key, retryInMs: Math.ceil(Math.max(0, freeAt - check.now_ms)), ahead };
  });
  return outcomes;
}

/**
 * Flow control's claim (DESIGN §5 "Flow control"): Postgres is the truth. A permit of a
 * concurrency key is a `running` execution recorded under the key whose lease holds — a worker
 * that dies keeps none past its lease. A rate key's window is its recent starts (`flow_start`).
 * Runs held back are marked on their rows, so they keep their place (`fire_at` order within a key)
 * through a worker's crash or Redis' loss. A claim takes the keys' transaction-scoped advisory
 * locks (in a fixed order), checks, and either writes the claim as any claim is written or marks
 * the run held — one key's claims serialize, other keys' and unkeyed claims are untouched.
 */
@Injectable()
export class FlowControlRepository {
  private readonly connections = new Semaphore(FLOW_CONNECTIONS);
  /** Lanes (a flow control, as JSON) whose last locked claim left room and held nothing. */
  private readonly roomy = new Set<string>();

  constructor(
    private readonly prisma: PrismaService,
    private readonly claims: ClaimsRepository,
  ) {}

  /**
   * Whether the last locked claim of this flow control left room and held nothing: its next claim
   * may go straight to {@link claimBatch} (a key with room pays one transaction), else it looks
   * first with {@link holdIfFull}.
   */
  hadRoom(flow: FlowPolicy): boolean {
    return this.roomy.has(JSON.stringify(flow));
  }

  /**
   * Marks held, in one statement, the claims whose keys are full (see {@link FLOW_HOLD_IF_FULL}):
   * the outcome of each claim held, null for one that may start (it goes on to {@link claimBatch}).
   * A rush of claims on full keys costs one statement per batch, not a locked transaction each.
   */
  async holdIfFull(claims: { write: ClaimWrite; flow: FlowPolicy }[]): Promise<(FlowClaimOutcome | null)[]> {
    const { rows } = await this.prisma.pool.query<{ n: number; cfull: boolean; rfull: boolean; behind: boolean; held_count: number; window_ms: number[]; marked: boolean; now_ms: number }>({
      name: 'punctual.flow.hold-if-full',
      text: FLOW_HOLD_IF_FULL,
      values: [
        claims.map((c) => c.write.id),
        claims.map((c) => c.flow.concurrency?.key ?? null),
        claims.map((c) => c.flow.rate?.key ?? null),
        claims.map((c) => c.flow.concurrency?.limit ?? null),
        claims.map((c) => c.flow.rate?.limit ?? null),
        claims.map((c) => (c.flow.rate ? rateWindowMs(c.flow.rate.perMs) : null)),
        claims.map((c) => c.write.seen.fireAt.toISOString()),
        claims.map((c) => c.write.seen.status),
        claims.map((c) => c.write.seen.attempt),
      ],
    });
    // Claims of one flow control held in this batch queue up behind each other.
    const placed = new Map<string, number>();
    return rows.map((row, i) => {
      const { write, flow } = claims[i]!;
      if (!row.cfull && !row.rfull && !row.behind) return null;
      // Not held: no longer as read (another claim, an edit): read again.
      if (!row.marked) return { kind: 'changed' };
      const lane = JSON.stringify(flow);
      this.roomy.delete(lane);
      const j = placed.get(lane) ?? 0;
      placed.set(lane, j + 1);
      // Waiting for a permit unless only the rate window is full.
      const onPermit = flow.concurrency !== null && (row.cfull || !row.rfull);
      const check: FlowCheck = { now_ms: row.now_ms, running: 0, first_held: null, held: row.held_count + j, window_ms: row.window_ms };
      const plan: BatchPlan = { going: [], waiting: [{ w: write, i: 0, fireMs: 0, id: write.id }], permits: onPermit ? 0 : Number.POSITIVE_INFINITY, starts: onPermit ? Number.POSITIVE_INFINITY : 0 };
      return heldOutcomes(check, plan, [], flow, [])[0]!;
    });
  }

  /**
   * Claims of runs under the same flow control, judged to run, in one transaction: as many as the
   * keys have room for start, in `(fire_at, id)` order and behind any run already held on the keys;
   * the rest are marked held. One outcome per write, in order.
   */
  claimBatch(writes: ClaimWrite[], flow: FlowPolicy, leaseMs: number): Promise<FlowClaimOutcome[]> {
    return this.connections.run(async () => {
      // A claim that stopped waiting while its write was queued gets `changed`: it reads again if it still cares.
      const live = writes.filter((w) => !w.abandoned?.());
      const outcomes = live.length ? await this.claimNow(live, flow, leaseMs) : [];
      const byWrite = new Map(live.map((w, i) => [w, outcomes[i]!]));
      return writes.map((w) => byWrite.get(w) ?? { kind: 'changed' });
    });
  }

  private async claimNow(writes: ClaimWrite[], flow: FlowPolicy, leaseMs: number): Promise<FlowClaimOutcome[]> {
    const keys = [...new Set([flow.concurrency?.key, flow.rate?.key].filter((k): k is string => k !== undefined))].sort();
    const client = await this.prisma.pool.connect();
    let done = false;
    try {
      // One round trip: the keys are quoted by the driver (a statement with parameters cannot share one).
      await client.query(`BEGIN; SELECT ${keys.map((key) => `pg_advisory_xact_lock(hashtextextended(${client.escapeLiteral(`punctual.flow:${key}`)}, 0))`).join(', ')}`);
      const check = await this.check(client, writes, flow);
      const plan = planBatch(check, writes, flow);
      const outcomes: FlowClaimOutcome[] = new Array(writes.length);
      const claimed: string[] = [];
      if (plan.going.length > 0) {
        const results = await this.claims.claimMany(plan.going.map((g) => g.w), leaseMs, client);
        plan.going.forEach((g, k) => {
          outcomes[g.i] = results[k]!;
          if (results[k]!.kind === 'claimed') claimed.push(g.id);
        });
      }
      const held = plan.waiting.map((o) => o.w);
      if (claimed.length || held.length) {
        await client.query({
          name: 'punctual.flow.finish',
          text: FLOW_FINISH,
          values: [flow.concurrency?.key ?? null, flow.rate?.key ?? null, claimed, held.map((w) => w.id), held.map((w) => w.seen.status), held.map((w) => w.seen.attempt)],
        });
      }
      await client.query('COMMIT');
      done = true;

      const roomLeft = plan.permits - claimed.length > 0 && plan.starts - claimed.length > 0;
      const lane = JSON.stringify(flow);
      if (roomLeft && plan.waiting.length === 0) {
        if (this.roomy.size >= ROOMY_LANES_KEPT) this.roomy.clear();
        this.roomy.add(lane);
      } else this.roomy.delete(lane);
      for (const g of plan.going) if (outcomes[g.i]!.kind === 'claimed') outcomes[g.i] = { ...(outcomes[g.i] as ClaimWriteOutcome), roomLeft };
      return heldOutcomes(check, plan, claimed, flow, outcomes);
    } finally {
      if (!done) await client.query('ROLLBACK').catch(() => undefined);
      client.release();
    }
  }

  private async check(db: pg.Pool | pg.PoolClient, writes: ClaimWrite[], flow: FlowPolicy): Promise<FlowCheck> {
    // The runs held ahead are counted ahead of the batch's first claim.
    const first = inOrder(writes)[0]!;
    const { rows } = await db.query<FlowCheck>({
      name: 'punctual.flow.check',
      text: FLOW_CHECK,
      values: [flow.concurrency?.key ?? null, flow.rate?.key ?? null, writes.map((w) => w.id), flow.rate?.limit ?? 1, flow.rate ? rateWindowMs(flow.rate.perMs) : 0, first.w.seen.fireAt.toISOString(), first.id],
    });
    return rows[0]!;
  }

  /** The keys with the most runs held back, then running (at most `limit`), and any of `named`. */
  async busiestKeys(limit: number, named: readonly string[] = []): Promise<FlowKeyLoad[]> {
    const rows = await this.prisma.$queryRaw<FlowKeyLoad[]>`
      WITH keyed AS (
        SELECT concurrency_key AS key, id, status, held_at, lease_until FROM task_execution
        WHERE concurrency_key IS NOT NULL AND status IN ('running', 'scheduled', 'queued', 'retrying')
        UNION
        SELECT rate_key AS key, id, status, held_at, lease_until FROM task_execution
        WHERE rate_key IS NOT NULL AND status IN ('running', 'scheduled', 'queued', 'retrying')
      ),
      loads AS (
        SELECT key,
          count(*) FILTER (WHERE status = 'running' AND lease_until > now())::int AS running,
          count(*) FILTER (WHERE status <> 'running' AND held_at IS NOT NULL)::int AS waiting
        FROM keyed GROUP BY key
      )
      SELECT key, running, waiting FROM loads WHERE running > 0 OR waiting > 0 OR key = ANY(${[...named]}::text[])
      ORDER BY (key = ANY(${[...named]}::text[])) DESC, waiting DESC, running DESC, key LIMIT ${limit + named.length}`;
    return rows;
  }
}
