import { Injectable } from '@nestjs/common';
import { PrismaService } from '../prisma.service.js';
import { ClaimsRepository, type ClaimWrite, type ClaimWriteOutcome } from './claims.repository.js';

/** A task's flow control (DESIGN §5), as its policy says. */
export interface FlowPolicy {
  concurrency: { key: string; limit: number } | null;
  rate: { key: string; limit: number; perMs: number } | null;
}

/**
 * - `claimed` (and the other write outcomes): as a plain claim's write.
 * - `held`: a key is at its limit, or an earlier run waits on it: the run is marked held and comes
 *   back — after `retryInMs` when the rate window says when, or when a run of `key` ends.
 */
export type FlowClaimOutcome = ClaimWriteOutcome | { kind: 'held'; key: string; retryInMs: number | null; ahead: number };

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
 * Flow-controlled claims of a process in flight at once, each on a connection of its own (the
 * process's pool has ten). Within a process one key's claims go one after another, so a busy key
 * never holds several connections waiting for its lock while other keys' claims wait for one.
 */
const FLOW_CONNECTIONS = 3;

/** Runs tasks one at a time per key, and at most `width` keys at a time, in arrival order. */
export class KeyedLanes {
  private readonly tails = new Map<string, Promise<unknown>>();
  private running = 0;
  private readonly queue: (() => void)[] = [];

  constructor(private readonly width: number) {}

  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    const result = previous.then(() => this.slot(task), () => this.slot(task));
    const tail = result.catch(() => undefined);
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }

  private async slot<T>(task: () => Promise<T>): Promise<T> {
    if (this.running >= this.width) await new Promise<void>((resolve) => this.queue.push(resolve));
    this.running += 1;
    try {
      return await task();
    } finally {
      this.running -= 1;
      this.queue.shift()?.();
    }
  }
}

/** Held runs counted ahead of one (to spread their returns); beyond this, "many". */
const AHEAD_COUNTED = 1_000;

/**
 * Everything a flow-controlled claim decides by, read after the keys' locks are taken (so it sees
 * every claim of the keys that committed before): the permits in use, the runs held ahead of this
 * one (earlier `fire_at`, due), and the start `limit` back in the rate key's window. Instants on
 * the wall clock (`clock_timestamp()`): the transaction's `now()` is from before the lock wait.
 */
const FLOW_CHECK = `
  SELECT (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS now_ms,
    CASE WHEN $1::text IS NULL THEN 0 ELSE (
      SELECT count(*) FROM task_execution r
      WHERE r.concurrency_key = $1 AND r.status = 'running' AND r.lease_until > clock_timestamp() AND r.id <> $3::uuid
    ) END::int AS running,
    (SELECT count(*) FROM (
      SELECT o.id FROM task_execution o
      WHERE o.concurrency_key = $1 AND o.held_at IS NOT NULL AND o.status IN ('scheduled', 'queued', 'retrying') AND o.id <> $3::uuid
        AND (o.fire_at, o.id) < ($4::timestamptz, $3::uuid)
        AND CASE WHEN o.status = 'retrying' THEN o.next_attempt_at ELSE o.fire_at END <= clock_timestamp()
      UNION
      SELECT o.id FROM task_execution o
      WHERE o.rate_key = $2 AND o.held_at IS NOT NULL AND o.status IN ('scheduled', 'queued', 'retrying') AND o.id <> $3::uuid
        AND (o.fire_at, o.id) < ($4::timestamptz, $3::uuid)
        AND CASE WHEN o.status = 'retrying' THEN o.next_attempt_at ELSE o.fire_at END <= clock_timestamp()
      LIMIT ${AHEAD_COUNTED}
    ) a)::int AS ahead,
    CASE WHEN $2::text IS NULL THEN NULL ELSE (
      SELECT (extract(epoch FROM f.at) * 1000)::float8 FROM flow_start f WHERE f.key = $2 ORDER BY f.at DESC OFFSET $5::int - 1 LIMIT 1
    ) END AS window_ms`;

/** The claim started: its keys recorded on it, the start in its rate key's window (and a day's old starts pruned). */
const FLOW_STARTED = `
  WITH started AS (INSERT INTO flow_start (key, at, execution_id) SELECT $2, clock_timestamp(), $3::uuid WHERE $2::text IS NOT NULL),
  pruned AS (DELETE FROM flow_start WHERE $2::text IS NOT NULL AND key = $2 AND at < clock_timestamp() - interval '1 day')
  UPDATE task_execution SET concurrency_key = $1, rate_key = $2, held_at = NULL WHERE id = $3::uuid`;

/** Held back: marked (first when kept), with the keys it waits on, only while it is as the judgement read it. */
const FLOW_HELD = `
  UPDATE task_execution SET held_at = COALESCE(held_at, clock_timestamp()), concurrency_key = $1, rate_key = $2
  WHERE id = $3::uuid AND status = $4::execution_status AND attempt = $5::int`;

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
  private readonly lanes = new KeyedLanes(FLOW_CONNECTIONS);

  constructor(
    private readonly prisma: PrismaService,
    private readonly claims: ClaimsRepository,
  ) {}

  claim(write: ClaimWrite, flow: FlowPolicy, leaseMs: number): Promise<FlowClaimOutcome> {
    const keys = [...new Set([flow.concurrency?.key, flow.rate?.key].filter((k): k is string => k !== undefined))].sort();
    return this.lanes.run(keys.join('\u0000'), () => this.claimNow(write, flow, keys, leaseMs));
  }

  private async claimNow(write: ClaimWrite, flow: FlowPolicy, keys: string[], leaseMs: number): Promise<FlowClaimOutcome> {
    const concurrencyKey = flow.concurrency?.key ?? null;
    const rateKey = flow.rate?.key ?? null;
    const client = await this.prisma.pool.connect();
    let done = false;
    try {
      await client.query('BEGIN');
      await client.query({ name: `punctual.flow.lock.${keys.length}`, text: `SELECT ${keys.map((_, i) => `pg_advisory_xact_lock(hashtextextended('punctual.flow:' || $${i + 1}::text, 0))`).join(', ')}`, values: keys });
      const { rows } = await client.query<{ now_ms: number; running: number; ahead: number; window_ms: number | null }>({
        name: 'punctual.flow.check',
        text: FLOW_CHECK,
        values: [concurrencyKey, rateKey, write.id, write.seen.fireAt.toISOString(), flow.rate?.limit ?? 1],
      });
      const check = rows[0]!;
      const full = flow.concurrency !== null && check.running >= flow.concurrency.limit;
      const windowEndsAt = flow.rate && check.window_ms !== null ? check.window_ms + rateWindowMs(flow.rate.perMs) : null;
      const rateFull = windowEndsAt !== null && windowEndsAt > check.now_ms;
      if (full || rateFull || check.ahead > 0) {
        await client.query({ name: 'punctual.flow.held', text: FLOW_HELD, values: [concurrencyKey, rateKey, write.id, write.seen.status, write.seen.attempt] });
        await client.query('COMMIT');
        done = true;
        // Waiting for a permit (or behind runs that wait for one): a run of the key ends or starts
        // first. Waiting on the rate window: it says when, and each run ahead takes its share of it.
        const perStart = flow.rate ? rateWindowMs(flow.rate.perMs) / flow.rate.limit : 0;
        const onPermit = full || (!rateFull && concurrencyKey !== null);
        const key = onPermit ? concurrencyKey! : rateKey!;
        const retryInMs = onPermit ? null : Math.max(0, (windowEndsAt ?? check.now_ms) - check.now_ms) + check.ahead * perStart;
        return { kind: 'held', key, retryInMs: retryInMs === null ? null : Math.ceil(retryInMs), ahead: check.ahead };
      }
      const [outcome] = await this.claims.claimMany([write], leaseMs, client);
      if (outcome!.kind === 'claimed') await client.query({ name: 'punctual.flow.started', text: FLOW_STARTED, values: [concurrencyKey, rateKey, write.id] });
      await client.query('COMMIT');
      done = true;
      return outcome!;
    } finally {
      if (!done) await client.query('ROLLBACK').catch(() => undefined);
      client.release();
    }
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
