import { Injectable } from '@nestjs/common';
import {
  type FlowCheck,
  type FlowPolicy,
  heldOnQuota,
  heldOnQuotaOutcome,
  heldOutcome,
  heldOutcomes,
  inOrder,
  planBatch,
  QUOTA_PER_MS,
  rateWindowMs,
} from '@punctual/planning';
import type pg from 'pg';
import { PrismaService } from '../../prisma.service.js';
import { CHANGED, type ClaimAnswer, ClaimsRepository, type ClaimWrite } from './claims.repository.js';
import { FLOW_CHECK, FLOW_FINISH, FLOW_HOLD_IF_FULL } from './flow-statements.js';
import { Semaphore } from './semaphore.js';

/** The busiest keys: runs holding a permit (`running`) and runs held back (`waiting`). */
export interface FlowKeyLoad {
  key: string;
  running: number;
  waiting: number;
}

/**
 * Flow-controlled claim statements of a process in flight at once, each on a connection of its own
 * (the process's pool has ten): claims of many keys never take the pool from the others.
 */
const FLOW_CONNECTIONS = 3;

/** Lanes remembered as having had room (forgotten all at once past this many). */
const ROOMY_LANES_KEPT = 10_000;

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
  async holdIfFull(claims: { write: ClaimWrite; flow: FlowPolicy }[]): Promise<(ClaimAnswer | null)[]> {
    const { rows } = await this.prisma.pool.query<{
      n: number;
      cfull: boolean;
      rfull: boolean;
      behind: boolean;
      held_count: number;
      window_ms: number[];
      marked: boolean;
      now_ms: number;
      qcfull: boolean;
      qrfull: boolean;
      qbehind: boolean;
      q_held_count: number;
      q_window_ms: number[];
    }>({
      name: this.prisma.statementName('punctual.flow.hold-if-full'),
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
        claims.map((c) => c.flow.quota?.namespace ?? null),
        claims.map((c) => c.flow.quota?.concurrency ?? null),
        claims.map((c) => c.flow.quota?.perMinute ?? null),
        rateWindowMs(QUOTA_PER_MS),
      ],
    });
    // Claims of one flow control held in this batch queue up behind each other.
    const placed = new Map<string, number>();
    return rows.map((row, i) => {
      const { flow } = claims[i]!;
      const onQuota = row.qcfull || row.qrfull || row.qbehind;
      if (!row.cfull && !row.rfull && !row.behind && !onQuota) return null;
      // Not held: no longer as read (another claim, an edit): read again.
      if (!row.marked) return CHANGED;
      const lane = JSON.stringify(flow);
      this.roomy.delete(lane);
      const j = placed.get(lane) ?? 0;
      placed.set(lane, j + 1);
      if (onQuota)
        return heldOnQuotaOutcome(
          flow.quota!,
          flow.quota!.concurrency !== null && (row.qcfull || !row.qrfull),
          row.q_held_count + j,
          row.q_window_ms,
          row.now_ms,
        );
      // Waiting for a permit unless only the rate window is full.
      const onPermit = flow.concurrency !== null && (row.cfull || !row.rfull);
      return heldOutcome(flow, onPermit, row.held_count + j, row.window_ms, row.now_ms);
    });
  }

  /**
   * Claims of runs under the same flow control, judged to run, in one transaction: as many as the
   * keys have room for start, in `(fire_at, id)` order and behind any run already held on the keys;
   * the rest are marked held. One outcome per write, in order.
   */
  claimBatch(writes: ClaimWrite[], flow: FlowPolicy, leaseMs: number): Promise<ClaimAnswer[]> {
    return this.connections.run(async () => {
      // A claim that stopped waiting while its write was queued is `changed`: it reads again if it still cares.
      const live = writes.filter((w) => !w.abandoned?.());
      const outcomes = live.length ? await this.claimNow(live, flow, leaseMs) : [];
      const byWrite = new Map(live.map((w, i) => [w, outcomes[i]!]));
      return writes.map((w) => byWrite.get(w) ?? CHANGED);
    });
  }

  private async claimNow(writes: ClaimWrite[], flow: FlowPolicy, leaseMs: number): Promise<ClaimAnswer[]> {
    // The namespace's run quotas lock as a key of their own: its runs of every key serialize on it.
    const keys = [
      ...new Set(
        [flow.concurrency?.key, flow.rate?.key]
          .filter((k): k is string => k !== undefined)
          .map((key) => `punctual.flow:${key}`)
          .concat(flow.quota ? [`punctual.quota:${flow.quota.namespace}`] : []),
      ),
    ].sort();
    const client = await this.prisma.pool.connect();
    let done = false;
    try {
      // One round trip: the keys are quoted by the driver (a statement with parameters cannot share one).
      await client.query(
        `BEGIN; SELECT ${keys.map((key) => `pg_advisory_xact_lock(hashtextextended(${client.escapeLiteral(key)}, 0))`).join(', ')}`,
      );
      const check = await this.check(client, writes, flow);
      const plan = planBatch(check, writes, flow);
      const outcomes: ClaimAnswer[] = new Array(writes.length);
      const claimed: string[] = [];
      if (plan.going.length > 0) {
        const results = await this.claims.claimMany(
          plan.going.map((g) => g.w),
          leaseMs,
          client,
        );
        plan.going.forEach((g, k) => {
          outcomes[g.i] = results[k]!;
          if (results[k]!.kind === 'started') claimed.push(g.id);
        });
      }
      const held = plan.waiting.map((o) => o.w);
      if (claimed.length || held.length) {
        await client.query({
          name: this.prisma.statementName('punctual.flow.finish'),
          text: FLOW_FINISH,
          values: [
            flow.concurrency?.key ?? null,
            flow.rate?.key ?? null,
            claimed,
            held.map((w) => w.id),
            held.map((w) => w.seen.status),
            held.map((w) => w.seen.attempt),
            flow.quota?.namespace ?? null,
            !!flow.quota?.perMinute,
            plan.waiting.map((_, j) => heldOnQuota(plan, plan.going.length + j)),
          ],
        });
      }
      await client.query('COMMIT');
      done = true;

      const roomLeft =
        plan.permits - claimed.length > 0 &&
        plan.starts - claimed.length > 0 &&
        (plan.quota === null || (plan.quota.permits - claimed.length > 0 && plan.quota.starts - claimed.length > 0));
      const lane = JSON.stringify(flow);
      if (roomLeft && plan.waiting.length === 0) {
        if (this.roomy.size >= ROOMY_LANES_KEPT) this.roomy.clear();
        this.roomy.add(lane);
      } else this.roomy.delete(lane);
      for (const g of plan.going) {
        const outcome = outcomes[g.i]!;
        if (outcome.kind !== 'started') continue;
        // Started under its namespace's run quotas: the finish recorded the namespace on its row.
        const execution = { ...outcome.execution, quotaNamespace: flow.quota?.namespace ?? null };
        outcomes[g.i] = { ...outcome, execution, roomLeft };
      }
      return heldOutcomes(check, plan, claimed, flow, outcomes);
    } finally {
      // The error on its way out is the one to report. A connection that cannot roll back is
      // destroyed (release with an error) rather than handed to the next caller mid-transaction.
      const broken = done
        ? undefined
        : await client.query('ROLLBACK').then(
            () => undefined,
            (error: Error) => error,
          );
      client.release(broken);
    }
  }

  private async check(db: pg.Pool | pg.PoolClient, writes: ClaimWrite[], flow: FlowPolicy): Promise<FlowCheck> {
    // The runs held ahead are counted ahead of the batch's first claim.
    const first = inOrder(writes)[0]!;
    const { rows } = await db.query<FlowCheck>({
      name: this.prisma.statementName('punctual.flow.check'),
      text: FLOW_CHECK,
      values: [
        flow.concurrency?.key ?? null,
        flow.rate?.key ?? null,
        writes.map((w) => w.id),
        flow.rate?.limit ?? 1,
        flow.rate ? rateWindowMs(flow.rate.perMs) : 0,
        first.w.seen.fireAt.toISOString(),
        first.id,
        flow.quota?.namespace ?? null,
        flow.quota?.perMinute ?? 0,
        rateWindowMs(QUOTA_PER_MS),
      ],
    });
    return rows[0]!;
  }

  /** The keys with the most runs held back, then running (at most `limit`), and any of `named`. */
  async busiestKeys(limit: number, named: readonly string[] = []): Promise<FlowKeyLoad[]> {
    const rows = await this.prisma.$queryRaw<FlowKeyLoad[]>`
      -- Only rows running or held: the partial indexes of each key, never every pending row (a
      -- campaign's 100,000 planned runs are not read every 15 s).
      WITH keyed AS (
        SELECT concurrency_key AS key, id, status, held_at, lease_until FROM live_execution
        WHERE concurrency_key IS NOT NULL AND status = 'running'
        UNION
        SELECT concurrency_key, id, status, held_at, lease_until FROM live_execution
        WHERE concurrency_key IS NOT NULL AND held_at IS NOT NULL AND status IN ('scheduled', 'queued', 'retrying')
        UNION
        SELECT rate_key, id, status, held_at, lease_until FROM live_execution
        WHERE rate_key IS NOT NULL AND status = 'running'
        UNION
        SELECT rate_key, id, status, held_at, lease_until FROM live_execution
        WHERE rate_key IS NOT NULL AND held_at IS NOT NULL AND status IN ('scheduled', 'queued', 'retrying')
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
