import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { Cluster, type SlotReport } from '../../test/support/cluster.js';
import { REDIS_URL } from '../../test/support/env.js';
import { sleep } from '../../test/support/processes.js';
import { deleteKeys, openSandbox } from '../../test/support/sandbox.js';
import type { BenchOptions } from '../support/options.js';
import { PeerWorker } from '../support/peer.js';
import { startLags } from '../support/punctual.js';
import { ratio, type Row, type ScenarioOutcome } from '../support/report.js';
import { ms, type Summary, summarize } from '../support/stats.js';
import { CONCURRENCY } from './precision.js';

/** Clients creating the tasks side by side, one request at a time each. */
const CLIENTS = 16;
/** The window starts this long after the last create (the system has settled, or has not); quick: shorter. */
const WINDOW_AFTER_MS = 8_000;
const QUICK_WINDOW_AFTER_MS = 2_000;
/** Slots of the window still unrun this long after it are counted as unrun (quick: sooner). */
const UNRUN_AFTER_MS = 5_000;
const QUICK_UNRUN_AFTER_MS = 2_000;

export interface LoadApiSide {
  /** Seconds to create the tasks (or the job schedulers), one request at a time by {@link CLIENTS} clients. */
  createSeconds: number;
  /** Start lag of the window's slots, ms. */
  lag: Summary;
  /** Slots of the window not started {@link UNRUN_AFTER_MS} after it. */
  unrun: number;
  expected: number;
}

export interface LoadApiResult {
  tasks: number;
  seconds: number;
  punctual: LoadApiSide & { accounting: Pick<SlotReport, 'lost' | 'doubled' | 'unfinished' | 'byStatus'> };
  bullmq: LoadApiSide;
}

/** Runs `create(i)` for i in [0, count) by `clients` concurrent callers, each one call at a time. */
async function createConcurrently(
  count: number,
  clients: number,
  create: (i: number) => Promise<void>,
): Promise<number> {
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      for (let i = next++; i < count; i = next++) await create(i);
    }),
  );
  return (performance.now() - started) / 1000;
}

/**
 * DESIGN §10's load in the form users reach it: `tasks` every-second `noop` tasks created one
 * `POST /v1/tasks` at a time by {@link CLIENTS} concurrent clients while the cluster runs (API,
 * scheduler and worker as three processes, `NODE_ENV=production`, `LOG_LEVEL=warn`), the start lag
 * of the slots of a `seconds`-long window beginning {@link WINDOW_AFTER_MS} after the last create.
 * The peer: as many BullMQ job schedulers (`every: 1000`) upserted the same way while a bare
 * worker of the same concurrency runs.
 */
export async function benchLoadApi(
  tasks: number,
  seconds: number,
  windowAfterMs = WINDOW_AFTER_MS,
  unrunAfterMs = UNRUN_AFTER_MS,
): Promise<LoadApiResult> {
  const punctual = await punctualLoadApi(tasks, seconds, windowAfterMs, unrunAfterMs);
  const bullmq = await bullmqLoadApi(tasks, seconds, windowAfterMs, unrunAfterMs);
  return { tasks, seconds, punctual, bullmq };
}

async function punctualLoadApi(
  tasks: number,
  seconds: number,
  windowAfterMs: number,
  unrunAfterMs: number,
): Promise<LoadApiResult['punctual']> {
  const sandbox = await openSandbox(undefined, 'bench');
  const cluster = await Cluster.start({
    schedulers: 1,
    workers: 1,
    api: true,
    sandbox,
    env: { NODE_ENV: 'production', LOG_LEVEL: 'warn', LEADER_TTL_MS: '5000', WORKER_CONCURRENCY: String(CONCURRENCY) },
  });
  try {
    await cluster.waitForLeader();
    const createSeconds = await createConcurrently(tasks, CLIENTS, async (i) => {
      const res = await cluster.call('POST', '/v1/tasks', {
        name: `load-${i}`,
        handler: 'noop',
        schedule: { cron: '* * * * * *' },
      });
      if (res.status !== 201)
        throw new Error(`create load-${i} answered ${res.status}: ${JSON.stringify(res.body).slice(0, 300)}`);
    });
    const from = Math.ceil((Date.now() + windowAfterMs) / 1000) * 1000;
    const to = from + seconds * 1000;
    await sleep(to + unrunAfterMs - Date.now());
    const { rows } = await cluster.db.query<{ started: number }>(
      `SELECT count(*) FILTER (WHERE started_at IS NOT NULL)::int AS started FROM task_execution WHERE scheduled_for >= $1 AND scheduled_for < $2`,
      [new Date(from), new Date(to)],
    );
    const expected = tasks * seconds;
    const unrun = expected - rows[0]!.started;
    const lag = await startLags(cluster.db, from, to);
    await cluster.settle(to - 1000, 60_000);
    const { rows: ids } = await cluster.db.query<{ id: string }>(`SELECT id FROM task WHERE name LIKE 'load-%'`);
    const report = await cluster.report(
      ids.map((r) => r.id),
      from,
      to - 1000,
    );
    const { lost, doubled, unfinished, byStatus } = report;
    return { createSeconds, lag, unrun, expected, accounting: { lost, doubled, unfinished, byStatus } };
  } finally {
    await cluster.stop();
  }
}

async function bullmqLoadApi(
  tasks: number,
  seconds: number,
  windowAfterMs: number,
  unrunAfterMs: number,
): Promise<LoadApiSide> {
  const prefix = `benchpeer${process.pid}`;
  const peer = await PeerWorker.start({ redisUrl: REDIS_URL, prefix, queue: 'load', concurrency: CONCURRENCY });
  const connections = Array.from(
    { length: CLIENTS },
    () => new Queue('load', { connection: new Redis(REDIS_URL, { maxRetriesPerRequest: null }), prefix }),
  );
  try {
    let client = 0;
    const createSeconds = await createConcurrently(tasks, CLIENTS, async (i) => {
      const queue = connections[client++ % CLIENTS]!;
      await queue.upsertJobScheduler(
        `load-${i}`,
        { every: 1000 },
        { name: 'tick', opts: { removeOnComplete: { count: 1000 } } },
      );
    });
    const from = Math.ceil((Date.now() + windowAfterMs) / 1000) * 1000;
    const to = from + seconds * 1000;
    await sleep(to + unrunAfterMs - Date.now());
    const records = (await peer.records()).filter((r) => r.due >= from && r.due < to);
    const expected = tasks * seconds;
    return {
      createSeconds,
      lag: summarize(records.map((r) => r.started - r.due)),
      unrun: Math.max(0, expected - records.length),
      expected,
    };
  } finally {
    await peer.stop();
    await Promise.all(connections.map((q) => q.close()));
    await deleteKeys(prefix);
  }
}

/** DESIGN §10's load, created through the API: 1,000 tasks, a 20 s window (quick: 50 tasks, 3 s). */
export async function loadApiScenario(opts: BenchOptions): Promise<ScenarioOutcome> {
  const result = await benchLoadApi(
    opts.quick ? 50 : 1_000,
    opts.quick ? 3 : 20,
    opts.quick ? QUICK_WINDOW_AFTER_MS : WINDOW_AFTER_MS,
    opts.quick ? QUICK_UNRUN_AFTER_MS : UNRUN_AFTER_MS,
  );
  const { tasks, seconds, punctual: p, bullmq: b } = result;
  const scenario = `load created through the API, ${tasks.toLocaleString('en')} tasks every second (one POST at a time, ${CLIENTS} clients), ${seconds} s window`;
  const problems: string[] = [];
  const a = p.accounting;
  if (a.lost.length) problems.push(`${scenario}: lost slots ${a.lost.slice(0, 5).join('; ')}`);
  if (a.doubled.length) problems.push(`${scenario}: slots that succeeded twice ${a.doubled.slice(0, 5).join(', ')}`);
  if (a.unfinished.length)
    problems.push(`${scenario}: unfinished ${a.unfinished.length} (${a.unfinished.slice(0, 3).join(', ')})`);
  const rows: Row[] = [
    {
      scenario,
      measure: 'created in',
      punctual: `${p.createSeconds.toFixed(1)} s`,
      peer: `BullMQ job schedulers ${b.createSeconds.toFixed(1)} s`,
      ratio: ratio(p.createSeconds, b.createSeconds),
      target: '—',
      met: null,
    },
    {
      scenario,
      measure: 'start lag p50',
      punctual: ms(p.lag.p50),
      peer: ms(b.lag.p50),
      ratio: ratio(p.lag.p50, b.lag.p50),
      target: '—',
      met: null,
    },
    {
      scenario,
      measure: 'start lag p99',
      punctual: ms(p.lag.p99),
      peer: ms(b.lag.p99),
      ratio: ratio(p.lag.p99, b.lag.p99),
      target: '≤ 1.0× peer',
      met: p.lag.p99 <= b.lag.p99,
    },
    {
      scenario,
      measure: 'start lag max',
      punctual: ms(p.lag.max),
      peer: ms(b.lag.max),
      ratio: ratio(p.lag.max, b.lag.max),
      target: '—',
      met: null,
    },
    {
      scenario,
      measure: 'slots of the window unrun a few seconds after it',
      punctual: `${p.unrun} of ${p.expected}`,
      peer: `${b.unrun} of ${b.expected}`,
      ratio: '—',
      target: '0',
      met: p.unrun === 0,
    },
    {
      scenario,
      measure: 'slots (each ends once)',
      punctual: Object.entries(a.byStatus)
        .map(([status, n]) => `${n} ${status}`)
        .join(', '),
      peer: '—',
      ratio: '—',
      target: 'none lost or doubled',
      met: a.lost.length + a.doubled.length + a.unfinished.length === 0,
    },
  ];
  return { rows, data: result, problems };
}
