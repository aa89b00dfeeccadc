import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { Cluster } from '../../test/support/cluster.js';
import { REDIS_URL } from '../../test/support/env.js';
import { sleep } from '../../test/support/processes.js';
import { deleteKeys, openSandbox } from '../../test/support/sandbox.js';
import { insertTasks } from '../../test/support/tasks.js';
import type { BenchOptions } from '../support/options.js';
import { PeerWorker } from '../support/peer.js';
import { ratio, type Row, type ScenarioOutcome } from '../support/report.js';
import { summarize } from '../support/stats.js';
import { CONCURRENCY } from './precision.js';

/** How long the worker runs on time before it is frozen, and how long it is watched after. */
interface Timing {
  onTimeMs: number;
  watchAfterMs: number;
  /** How long after the watch the runs are read (the last slots of the watch finish). */
  settleMs: number;
}
const FULL: Timing = { onTimeMs: 6_000, watchAfterMs: 25_000, settleMs: 5_000 };
const QUICK: Timing = { onTimeMs: 2_000, watchAfterMs: 6_000, settleMs: 2_000 };
/** A slot second is on time when the p99 start lag of its slots is under this. */
const ON_TIME_P99_MS = 1_000;

/** One run as both sides record it, epoch ms. */
interface Start {
  slot: number;
  started: number;
}

export interface OverloadSide {
  /** Runs started per second while on time, before the freeze. */
  onTimeRate: number;
  /** ms from the worker's return until every later slot second's p99 start lag is under {@link ON_TIME_P99_MS}; null: not within the watch. */
  recoveredAfterMs: number | null;
  /** Runs started per second from the return until the backlog was gone (recovered), mean, and its best whole second. */
  drainRate: number;
  drainPeak: number;
  /** Slots due from the freeze to the end of the watch, and how many of them ran. */
  due: number;
  ran: number;
}

export interface OverloadResult {
  tasks: number;
  freezeMs: number;
  punctual: OverloadSide;
  bullmq: OverloadSide;
}

/**
 * What a run of starts says about a freeze at `[frozeAt, resumedAt)`: the rate before it, when the
 * lag came back, the rate of the drain. Slot seconds are judged by the p99 of their slots' lag.
 */
export function judgeOverload(
  starts: Start[],
  tasks: number,
  frozeAt: number,
  resumedAt: number,
  end: number,
  timing: Timing,
): OverloadSide {
  const before = starts.filter((s) => s.started >= frozeAt - timing.onTimeMs + 1_000 && s.started < frozeAt);
  const onTimeRate = before.length / ((timing.onTimeMs - 1_000) / 1000);
  const bySlot = new Map<number, number[]>();
  for (const s of starts) {
    if (s.slot < frozeAt - 1_000 || s.slot >= end) continue;
    const second = Math.floor(s.slot / 1000) * 1000;
    bySlot.set(second, [...(bySlot.get(second) ?? []), s.started - s.slot]);
  }
  const seconds = [...bySlot.keys()].sort((a, b) => a - b);
  // The first slot second from which every later one (to the end of the watch) is on time.
  let recoveredAt: number | null = null;
  for (let i = seconds.length - 1; i >= 0; i -= 1) {
    const lag = summarize(bySlot.get(seconds[i]!)!);
    // A second whose slots did not all run is not on time.
    if (lag.p99 >= ON_TIME_P99_MS || lag.n < tasks * 0.99) break;
    recoveredAt = seconds[i]!;
  }
  // Recovered at that slot's start (its runs started within a second of it).
  const recoveredAfterMs =
    recoveredAt === null || recoveredAt > end - 2_000 ? null : Math.max(0, recoveredAt - resumedAt);
  const drainEnd = recoveredAt === null ? end : Math.max(resumedAt + 1_000, recoveredAt);
  const drain = starts.filter((s) => s.started >= resumedAt && s.started < drainEnd);
  const perSecond = new Map<number, number>();
  for (const s of drain)
    perSecond.set(
      Math.floor((s.started - resumedAt) / 1000),
      (perSecond.get(Math.floor((s.started - resumedAt) / 1000)) ?? 0) + 1,
    );
  const wholeSeconds = Math.floor((drainEnd - resumedAt) / 1000);
  let drainPeak = 0;
  for (let i = 0; i < wholeSeconds; i += 1) drainPeak = Math.max(drainPeak, perSecond.get(i) ?? 0);
  // Slots due from the freeze to a few seconds before the end of the watch (all of them must have run).
  const dueSlots = starts.filter((s) => s.slot >= frozeAt && s.slot < end - 3_000);
  const due = tasks * Math.ceil((end - 3_000 - Math.ceil(frozeAt / 1000) * 1000) / 1000);
  return {
    onTimeRate,
    recoveredAfterMs,
    drainRate: drain.length / ((drainEnd - resumedAt) / 1000),
    drainPeak,
    due,
    ran: dueSlots.length,
  };
}

/**
 * DESIGN §10's overload: `tasks` every-second `noop` tasks on one scheduler and one worker
 * process (WORKER_CONCURRENCY 50); once on time, the worker is frozen (SIGSTOP) for `freezeMs`,
 * then let go. Measured: when the lag is back under a second, how fast the backlog drains against
 * the rate on time. The peer: as many BullMQ job schedulers and a bare worker frozen the same way.
 */
export async function benchOverload(tasks: number, freezeMs: number, timing = FULL): Promise<OverloadResult> {
  return {
    tasks,
    freezeMs,
    punctual: await punctualOverload(tasks, freezeMs, timing),
    bullmq: await bullmqOverload(tasks, freezeMs, timing),
  };
}

async function punctualOverload(tasks: number, freezeMs: number, timing: Timing): Promise<OverloadSide> {
  const sandbox = await openSandbox(undefined, 'bench');
  const cluster = await Cluster.start({
    schedulers: 1,
    workers: 1,
    sandbox,
    env: { LOG_LEVEL: 'warn', LEADER_TTL_MS: '5000', WORKER_CONCURRENCY: String(CONCURRENCY) },
  });
  try {
    await cluster.waitForLeader();
    const firstSlot = Math.ceil(Date.now() / 1000) * 1000 + 2_000;
    await insertTasks(cluster.db, tasks, { prefix: 'overload', nextRunAt: new Date(firstSlot) });
    await sleep(firstSlot + timing.onTimeMs - Date.now());
    const worker = cluster.workers[0]!;
    const frozeAt = Date.now();
    worker.signal('SIGSTOP');
    await sleep(freezeMs);
    worker.signal('SIGCONT');
    const resumedAt = Date.now();
    const end = resumedAt + timing.watchAfterMs;
    await sleep(end + timing.settleMs - Date.now());
    const { rows } = await cluster.db.query<{ slot: number; started: number }>(
      `SELECT (extract(epoch FROM fire_at) * 1000)::float8 AS slot, (extract(epoch FROM started_at) * 1000)::float8 AS started
       FROM task_execution WHERE started_at IS NOT NULL AND attempt = 1 AND scheduled_for >= $1`,
      [new Date(firstSlot)],
    );
    return judgeOverload(rows, tasks, frozeAt, resumedAt, end, timing);
  } finally {
    await cluster.stop();
  }
}

async function bullmqOverload(tasks: number, freezeMs: number, timing: Timing): Promise<OverloadSide> {
  const prefix = `benchpeer${process.pid}`;
  const peer = await PeerWorker.start({ redisUrl: REDIS_URL, prefix, queue: 'overload', concurrency: CONCURRENCY });
  const queue = new Queue('overload', { connection: new Redis(REDIS_URL, { maxRetriesPerRequest: null }), prefix });
  try {
    for (let i = 0; i < tasks; i += 500) {
      const ids = Array.from({ length: Math.min(500, tasks - i) }, (_, j) => `overload-${i + j}`);
      await Promise.all(
        ids.map((id) =>
          queue.upsertJobScheduler(id, { every: 1000 }, { name: 'tick', opts: { removeOnComplete: { count: 1000 } } }),
        ),
      );
    }
    await sleep(timing.onTimeMs + 1_000);
    const frozeAt = Date.now();
    peer.signal('SIGSTOP');
    await sleep(freezeMs);
    peer.signal('SIGCONT');
    const resumedAt = Date.now();
    const end = resumedAt + timing.watchAfterMs;
    await sleep(end + Math.min(2_000, timing.settleMs) - Date.now());
    const records = await peer.records();
    return judgeOverload(
      records.map((r) => ({ slot: r.due, started: r.started })),
      tasks,
      frozeAt,
      resumedAt,
      end,
      timing,
    );
  } finally {
    await peer.stop();
    await queue.close();
    await deleteKeys(prefix);
  }
}

/** 1,000 every-second tasks, the worker frozen 8 s (quick: 50 tasks, 2 s, a shorter watch). */
export async function overloadScenario(opts: BenchOptions): Promise<ScenarioOutcome> {
  const timing = opts.quick ? QUICK : FULL;
  const result = await benchOverload(opts.quick ? 50 : 1_000, opts.quick ? 2_000 : 8_000, timing);
  const { tasks, freezeMs, punctual: p, bullmq: b } = result;
  const scenario = `overload, ${tasks.toLocaleString('en')} tasks every second, the worker frozen ${freezeMs / 1000} s`;
  const after = (value: number | null) =>
    value === null ? `not within ${timing.watchAfterMs / 1000} s` : `${(value / 1000).toFixed(1)} s`;
  const rows: Row[] = [
    {
      scenario,
      measure: `on time again (every later second's p99 lag < ${ON_TIME_P99_MS / 1000} s) after the return`,
      punctual: after(p.recoveredAfterMs),
      peer: `BullMQ job schedulers ${after(b.recoveredAfterMs)}`,
      ratio:
        p.recoveredAfterMs === null || b.recoveredAfterMs === null
          ? '—'
          : ratio(p.recoveredAfterMs, Math.max(1, b.recoveredAfterMs)),
      target: '≤ 10 s',
      met: p.recoveredAfterMs !== null && p.recoveredAfterMs <= 10_000,
    },
    {
      scenario,
      measure: 'runs started per second: draining (mean ÷ best second) | on time',
      punctual: `${Math.round(p.drainRate)}/s ÷ ${p.drainPeak}/s | ${Math.round(p.onTimeRate)}/s`,
      peer: `${Math.round(b.drainRate)}/s ÷ ${b.drainPeak}/s | ${Math.round(b.onTimeRate)}/s`,
      ratio: p.drainPeak ? `${(p.drainRate / p.drainPeak).toFixed(2)}×` : '—',
      target: 'drain ≥ 0.9× its peak, ≥ on-time rate',
      met: p.drainRate >= 0.9 * p.drainPeak && p.drainRate >= p.onTimeRate,
    },
    {
      scenario,
      measure: 'slots due from the freeze on that ran',
      punctual: `${p.ran} of ${p.due}`,
      peer: `${b.ran} of ${b.due} (a job scheduler skips the slots it was frozen through)`,
      ratio: '—',
      target: 'all',
      met: p.ran >= p.due,
    },
  ];
  // Every slot due from the freeze on runs: a backlog is drained, never dropped.
  const problems =
    p.ran < p.due ? [`${scenario}: ${p.due - p.ran} of ${p.due} slots due from the freeze on did not run`] : [];
  return { rows, data: result, problems };
}
