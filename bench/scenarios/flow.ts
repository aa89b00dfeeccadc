import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import type pg from 'pg';
import { Cluster } from '../../test/support/cluster.js';
import { REDIS_URL } from '../../test/support/env.js';
import { sleep, waitFor } from '../../test/support/processes.js';
import { deleteKeys, openSandbox } from '../../test/support/sandbox.js';
import type { BenchOptions } from '../support/options.js';
import { PeerWorker } from '../support/peer.js';
import { statusCounts } from '../support/punctual.js';
import { ratio, type Row, type ScenarioOutcome } from '../support/report.js';
import { ms, type Summary, summarize } from '../support/stats.js';

export interface FlowResult {
  /** One-offs due one after another, half under a concurrency key that always has room. */
  room: { runs: number; keyed: Summary; plain: Summary; byStatus: Record<string, number> };
  /** Runs due at once over keys of one permit each, handler `sleep`. */
  limits: {
    runs: number;
    keys: number;
    handlerMs: number;
    /** ms from the common instant to the last completion: Punctual, and the ideal (runs per key × handler time). */
    lastFinish: number;
    ideal: number;
    /** The most runs of one key seen running at once (from their rows): must be 1. */
    mostPerKey: number;
    byStatus: Record<string, number>;
    /** The same jobs on a bare BullMQ worker as wide as all the keys' permits together (no per-key limit). */
    bullmq: { lastFinish: number; runs: number };
  };
}

/** Inserts one-offs `<prefix>-<n>` due at `at(n)`, with these flow columns, handler and payload. */
async function insertOneOffs(
  db: pg.Client,
  count: number,
  prefix: string,
  at: (n: number) => number,
  flow: { key?: (n: number) => string; limit?: number },
  handler: string,
  payload: object,
): Promise<void> {
  const runAt = Array.from({ length: count }, (_, i) => new Date(at(i + 1)).toISOString());
  const keys = Array.from({ length: count }, (_, i) => flow.key?.(i + 1) ?? null);
  await db.query(
    `INSERT INTO task (name, handler, schedule_kind, run_at, next_run_at, secret, payload, concurrency_key, concurrency_limit)
     SELECT $1 || '-' || n, $2, 'at', r.at, r.at, md5(n::text), $3::jsonb, r.key, CASE WHEN r.key IS NULL THEN NULL ELSE $4::int END
     FROM unnest($5::timestamptz[], $6::text[]) WITH ORDINALITY AS r(at, key, n)`,
    [prefix, handler, JSON.stringify(payload), flow.limit ?? null, runAt, keys],
  );
}

const lagsOf = async (db: pg.Client, prefix: string) =>
  summarize(
    (
      await db.query<{ lag: number }>(
        `SELECT extract(epoch FROM started_at - fire_at) * 1000 AS lag FROM task_execution WHERE task_name LIKE $1 AND attempt = 1`,
        [`${prefix}-%`],
      )
    ).rows.map((r) => Number(r.lag)),
  );

/**
 * Flow control (DESIGN §5, §10). (a) The cost of a key with room: one-offs due one after another,
 * alternately under a concurrency key of limit 10,000 and under none — the start lag of each. (b)
 * Runs due at once over keys of one permit each, a handler of `handlerMs`: how close the drain
 * comes to its ideal (each key's runs one after another), with no key ever running two. The peer
 * is a bare BullMQ worker as wide as all the permits together: open-source BullMQ has no per-key
 * limit (BullMQ Pro's groups do), so it shows the same work at the same parallelism, unlimited.
 */
export async function benchFlow(opts: {
  roomRuns: number;
  runs: number;
  keys: number;
  handlerMs: number;
}): Promise<FlowResult> {
  return {
    room: await keyWithRoom(opts.roomRuns),
    limits: { ...(await atTheLimits(opts)), bullmq: await bullmqAtOnce(opts) },
  };
}

async function keyWithRoom(runs: number): Promise<FlowResult['room']> {
  const sandbox = await openSandbox(undefined, 'bench');
  const cluster = await Cluster.start({
    schedulers: 1,
    workers: 1,
    sandbox,
    env: { LOG_LEVEL: 'warn', LEADER_TTL_MS: '5000' },
  });
  try {
    await cluster.waitForLeader();
    // 20 a second, one every 50 ms, alternately keyed and not.
    const start = Math.ceil((Date.now() + 3_000) / 1000) * 1000;
    await insertOneOffs(
      cluster.db,
      runs / 2,
      'keyed',
      (n) => start + (n - 1) * 100,
      { key: () => 'roomy', limit: 10_000 },
      'noop',
      {},
    );
    await insertOneOffs(cluster.db, runs / 2, 'plain', (n) => start + (n - 1) * 100 + 50, {}, 'noop', {});
    await sleep(start + runs * 50 - Date.now());
    await waitFor(async () => (await statusCounts(cluster.db)).succeeded === runs || null, 60_000, `${runs} runs`, 100);
    return {
      runs,
      keyed: await lagsOf(cluster.db, 'keyed'),
      plain: await lagsOf(cluster.db, 'plain'),
      byStatus: await statusCounts(cluster.db),
    };
  } finally {
    await cluster.stop();
  }
}

async function atTheLimits(opts: {
  runs: number;
  keys: number;
  handlerMs: number;
}): Promise<Omit<FlowResult['limits'], 'bullmq'>> {
  const sandbox = await openSandbox(undefined, 'bench');
  // Wide enough that the keys, not the worker, are the limit.
  const cluster = await Cluster.start({
    schedulers: 1,
    workers: 1,
    sandbox,
    env: { LOG_LEVEL: 'warn', LEADER_TTL_MS: '5000', WORKER_CONCURRENCY: String(opts.keys * 2) },
  });
  try {
    await cluster.waitForLeader();
    const at = Math.ceil((Date.now() + 3_000 + opts.runs / 2) / 1000) * 1000;
    await insertOneOffs(
      cluster.db,
      opts.runs,
      'limits',
      () => at,
      { key: (n) => `key-${n % opts.keys}`, limit: 1 },
      'sleep',
      { ms: opts.handlerMs },
    );
    await sleep(at - Date.now());
    const done = await waitFor(
      async () => {
        const { rows } = await cluster.db.query(
          `SELECT count(*) FILTER (WHERE status IN ('succeeded', 'dead', 'skipped', 'missed', 'cancelled'))::int AS done,
                  extract(epoch FROM max(finished_at) - $1::timestamptz) * 1000 AS last_finish FROM task_execution`,
          [new Date(at)],
        );
        return rows[0].done >= opts.runs ? rows[0] : null;
      },
      300_000,
      `${opts.runs} runs over ${opts.keys} keys`,
      200,
    );
    // Two runs of one key overlapping in time (first attempts; a retry would be its own row's).
    const { rows } = await cluster.db.query(
      `SELECT coalesce(max(n), 0)::int AS most FROM (
         SELECT count(*) OVER (PARTITION BY a.concurrency_key, a.id) AS n
         FROM task_execution a JOIN task_execution b ON b.concurrency_key = a.concurrency_key AND b.started_at <= a.started_at AND b.finished_at > a.started_at
       ) x`,
    );
    return {
      runs: opts.runs,
      keys: opts.keys,
      handlerMs: opts.handlerMs,
      lastFinish: Number(done.last_finish),
      ideal: (opts.runs / opts.keys) * opts.handlerMs,
      mostPerKey: rows[0].most,
      byStatus: await statusCounts(cluster.db),
    };
  } finally {
    await cluster.stop();
  }
}

async function bullmqAtOnce(opts: {
  runs: number;
  keys: number;
  handlerMs: number;
}): Promise<FlowResult['limits']['bullmq']> {
  const prefix = `benchpeer${process.pid}`;
  const peer = await PeerWorker.start({
    redisUrl: REDIS_URL,
    prefix,
    queue: 'flow',
    concurrency: opts.keys,
    jobMs: opts.handlerMs,
  });
  const queue = new Queue('flow', { connection: new Redis(REDIS_URL, { maxRetriesPerRequest: null }), prefix });
  try {
    const at = Date.now() + 1_000 + opts.runs / 5;
    for (let i = 0; i < opts.runs; i += 500) {
      const batch = Array.from({ length: Math.min(500, opts.runs - i) }, (_, j) => ({
        name: 'flow',
        data: { n: i + j },
        opts: { delay: at - Date.now(), removeOnComplete: { count: 1000 } },
      }));
      await queue.addBulk(batch);
    }
    const records = await waitFor(
      async () => {
        const seen = await peer.records();
        return seen.length >= opts.runs ? seen : null;
      },
      300_000,
      `${opts.runs} BullMQ jobs`,
      200,
    );
    return { lastFinish: Math.max(...records.map((r) => r.finished)) - at, runs: records.length };
  } finally {
    await peer.stop();
    await queue.close();
    await deleteKeys(prefix);
  }
}

/** The flow scenario as table rows: 400 runs for the key with room, 10,000 over 100 keys (quick: 20; 100 over 10). */
export async function flowScenario(opts: BenchOptions): Promise<ScenarioOutcome> {
  const r = await benchFlow(
    opts.quick
      ? { roomRuns: 20, runs: 100, keys: 10, handlerMs: 20 }
      : { roomRuns: 400, runs: 10_000, keys: 100, handlerMs: 100 },
  );
  const { room, limits } = r;
  const added = room.keyed.p50 - room.plain.p50;
  const scenarioA = `flow, ${room.runs} one-offs 50 ms apart, half under a key with room`;
  const scenarioB = `flow, ${limits.runs.toLocaleString('en')} runs due at once over ${limits.keys} keys of 1 permit, ${limits.handlerMs} ms each`;
  const rows: Row[] = [
    {
      scenario: scenarioA,
      measure: 'start lag p50, keyed',
      punctual: ms(room.keyed.p50),
      peer: `no key ${ms(room.plain.p50)}`,
      ratio: ratio(room.keyed.p50, room.plain.p50),
      target: '≤ 2 ms added',
      met: added <= 2,
    },
    {
      scenario: scenarioA,
      measure: 'start lag p99, keyed',
      punctual: ms(room.keyed.p99),
      peer: `no key ${ms(room.plain.p99)}`,
      ratio: ratio(room.keyed.p99, room.plain.p99),
      target: '—',
      met: null,
    },
    {
      scenario: scenarioB,
      measure: 'last completion after the instant',
      punctual: ms(limits.lastFinish),
      peer: `BullMQ, ${limits.keys} wide, no keys ${ms(limits.bullmq.lastFinish)}`,
      ratio: ratio(limits.lastFinish, limits.bullmq.lastFinish),
      target: '—',
      met: null,
    },
    {
      scenario: scenarioB,
      measure: 'drain ÷ ideal (each key one after another)',
      punctual: `${(limits.lastFinish / limits.ideal).toFixed(2)}× of ${ms(limits.ideal)}`,
      peer: `${(limits.bullmq.lastFinish / limits.ideal).toFixed(2)}×`,
      ratio: ratio(limits.lastFinish, limits.bullmq.lastFinish),
      target: '—',
      met: null,
    },
    {
      scenario: scenarioB,
      measure: 'most runs of one key at once',
      punctual: String(limits.mostPerKey),
      peer: 'no per-key limit',
      ratio: '—',
      target: '1',
      met: limits.mostPerKey === 1,
    },
  ];
  const problems = [
    ...(room.byStatus.succeeded === room.runs
      ? []
      : [`flow: expected ${room.runs} succeeded, got ${JSON.stringify(room.byStatus)}`]),
    ...(limits.byStatus.succeeded === limits.runs
      ? []
      : [`flow: expected ${limits.runs} succeeded at the limits, got ${JSON.stringify(limits.byStatus)}`]),
    ...(limits.mostPerKey === 1 ? [] : [`flow: a key of one permit ran ${limits.mostPerKey} at once`]),
  ];
  return { rows, data: r, problems };
}
