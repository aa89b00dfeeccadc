import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { PLAN_STRIDE_MS } from '../../libs/scheduler/src/index.js';
import { openSandbox, type Sandbox } from '../../test/support/sandbox.js';
import { insertTasks } from '../../test/support/tasks.js';
import type { BenchOptions } from '../support/options.js';
import { InProcessScheduler } from '../support/punctual.js';
import { ratio, type Row, type ScenarioOutcome } from '../support/report.js';

interface Planning {
  slots: number;
  seconds: number;
  /** CPU time of the planning process(es), all together. */
  cpuMs: number;
}

export interface ShardsResult {
  tasks: number;
  /** One process: all tasks in one shard, then the same tasks split into four shards planned side by side. */
  oneShard: Planning;
  fourShards: Planning;
  /** Two shards: planned by one process, then by two processes (one shard each), started together. */
  oneProcess: Planning;
  twoProcesses: Planning;
}

const PLANNER = fileURLToPath(new URL('../support/shard-planner.js', import.meta.url));
/** The planner plans about a stride beyond the lookahead (each task to its phase of it): about 5 s of slots per every-second task in all. */
const LOOKAHEAD_MS = 5_000 - PLAN_STRIDE_MS;

/**
 * Sharded scheduling (DESIGN §11): what planning costs with the tasks split into shards. The same
 * every-second tasks, all due, are planned 5 s ahead (a) in this process as one shard and as four
 * shards side by side — the CPU per planned slot of the planning process; (b) split into two
 * shards, by one planning process and by two (one shard each) — planning throughput. Postgres
 * does most of the work; on a machine with few cores the processes share them with it.
 */
export async function benchShards(tasks: number): Promise<ShardsResult> {
  const inProcess = async (count: number): Promise<Planning> =>
    withTasks(tasks, async (sandbox, now) => {
      const scheduler = await InProcessScheduler.open(
        sandbox.config({ LOOKAHEAD_MS: String(LOOKAHEAD_MS), LOG_LEVEL: 'warn' }),
      );
      try {
        return await scheduler.planShards(await scheduler.leadShards(count, range(count)), now);
      } finally {
        await scheduler.close();
      }
    });
  const inProcesses = async (assignment: number[][]): Promise<Planning> =>
    withTasks(tasks, (sandbox, now) => planInProcesses(sandbox, assignment, now));
  return {
    tasks,
    oneShard: await inProcess(1),
    fourShards: await inProcess(4),
    oneProcess: await inProcesses([[0, 1]]),
    twoProcesses: await inProcesses([[0], [1]]),
  };
}

async function withTasks<T>(tasks: number, run: (sandbox: Sandbox, now: Date) => Promise<T>): Promise<T> {
  const sandbox = await openSandbox(undefined, 'bench');
  const db = new pg.Client({ connectionString: sandbox.databaseUrl });
  await db.connect();
  try {
    const now = new Date(Math.ceil(Date.now() / 1000) * 1000);
    await insertTasks(db, tasks, { prefix: 'shards', nextRunAt: now });
    await db.query('VACUUM ANALYZE task');
    return await run(sandbox, now);
  } finally {
    await db.end();
    await sandbox.dispose();
  }
}

/** One planning process per entry of `assignment` (its shards), started together once all are ready. */
async function planInProcesses(sandbox: Sandbox, assignment: number[][], now: Date): Promise<Planning> {
  const count = Math.max(...assignment.flat()) + 1;
  const env = { ...process.env, ...sandbox.env({ LOOKAHEAD_MS: String(LOOKAHEAD_MS) }) };
  const children = assignment.map((shards) =>
    spawn(process.execPath, [PLANNER, String(count), shards.join(','), String(now.getTime())], {
      env,
      stdio: ['pipe', 'pipe', 'inherit'],
    }),
  );
  try {
    const lines = children.map(linesOf);
    await Promise.all(lines.map((next) => next()));
    const t0 = performance.now();
    for (const child of children) child.stdin!.write('go\n');
    const results = (await Promise.all(lines.map((next) => next()))).map((line) => JSON.parse(line) as Planning);
    return {
      slots: results.reduce((a, r) => a + r.slots, 0),
      seconds: (performance.now() - t0) / 1000,
      cpuMs: results.reduce((a, r) => a + r.cpuMs, 0),
    };
  } finally {
    for (const child of children) child.kill();
  }
}

/** Each call resolves with the child's next line of output. */
function linesOf(child: ChildProcess): () => Promise<string> {
  const queued: string[] = [];
  const waiting: ((line: string) => void)[] = [];
  createInterface({ input: child.stdout! }).on('line', (line) =>
    waiting.length ? waiting.shift()!(line) : queued.push(line),
  );
  child.once('exit', (code) => {
    if (code) for (const w of waiting.splice(0)) w(`{"error":"planner exited with ${code}"}`);
  });
  return () => (queued.length ? Promise.resolve(queued.shift()!) : new Promise((resolve) => waiting.push(resolve)));
}

function range(n: number): number[] {
  return Array.from({ length: n }, (_, i) => i);
}

/** The shards scenario as table rows: 20,000 every-second tasks (quick: 1,000). */
export async function shardsScenario(opts: BenchOptions): Promise<ScenarioOutcome> {
  const r = await benchShards(opts.quick ? 1_000 : 20_000);
  const scenario = `shards, ${r.tasks.toLocaleString('en')} every-second tasks × 5 s of slots`;
  const cpuPerSlot = (p: Planning) => (p.cpuMs * 1000) / Math.max(1, p.slots);
  const rate = (p: Planning) => p.slots / p.seconds;
  const us = (n: number) => `${n.toFixed(1)} µs`;
  const perSecond = (n: number) => `${Math.round(n).toLocaleString('en')} slots/s`;
  const rows: Row[] = [
    {
      scenario,
      measure: 'planner CPU per slot, 4 shards in one process',
      punctual: us(cpuPerSlot(r.fourShards)),
      peer: `1 shard ${us(cpuPerSlot(r.oneShard))}`,
      ratio: ratio(cpuPerSlot(r.fourShards), cpuPerSlot(r.oneShard)),
      target: 'about 1×',
      met: null,
    },
    {
      scenario,
      measure: 'planned, 4 shards in one process',
      punctual: perSecond(rate(r.fourShards)),
      peer: `1 shard ${perSecond(rate(r.oneShard))}`,
      ratio: ratio(rate(r.fourShards), rate(r.oneShard)),
      target: '—',
      met: null,
    },
    {
      scenario,
      measure: 'planned, 2 shards by 2 processes',
      punctual: perSecond(rate(r.twoProcesses)),
      peer: `1 process ${perSecond(rate(r.oneProcess))}`,
      ratio: ratio(rate(r.twoProcesses), rate(r.oneProcess)),
      target: '—',
      met: null,
    },
  ];
  const expected = r.tasks * 5;
  const problems = [r.oneShard, r.fourShards, r.oneProcess, r.twoProcesses]
    .filter((p) => Math.abs(p.slots - expected) > r.tasks)
    .map((p) => `shards: planned ${p.slots} slots, expected about ${expected}`);
  return { rows, data: r, problems };
}
