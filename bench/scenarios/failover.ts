import { Cluster, type SlotReport } from '../../test/support/cluster.js';
import { sleep } from '../../test/support/processes.js';
import { openSandbox } from '../../test/support/sandbox.js';
import type { BenchOptions } from '../support/options.js';
import type { Row, ScenarioOutcome } from '../support/report.js';
import { ms, summarize, type Summary } from '../support/stats.js';

export interface FailoverResult {
  kills: number;
  leaderTtlMs: number;
  /** ms from each `kill -9` of the leader to the next slot fired (first `queued_at` after it). */
  failovers: number[];
  summary: Summary;
  accounting: Pick<SlotReport, 'expected' | 'lost' | 'doubled' | 'unfinished' | 'byStatus'>;
}

/**
 * Scenario 6: two schedulers and a worker, 10 every-second tasks (overlap=allow, so the count
 * measures fencing alone); the leader is `kill -9`ed `kills` times (a replacement scheduler joins
 * each time). Every slot of the whole window is then accounted for.
 */
export async function benchFailover(kills: number, leaderTtlMs: number): Promise<FailoverResult> {
  const sandbox = await openSandbox(undefined, 'bench');
  const cluster = await Cluster.start({
    schedulers: 2,
    workers: 1,
    sandbox,
    env: { LOG_LEVEL: 'warn', LEADER_TTL_MS: String(leaderTtlMs) },
  });
  try {
    await cluster.waitForLeader();
    const { ids, firstSlot } = await cluster.createEverySecondTasks(10, { overlap: 'allow' });
    await sleep(2_000);
    const failovers: number[] = [];
    for (let i = 0; i < kills; i += 1) {
      const leader = await cluster.waitForLeader(leaderTtlMs * 3);
      const killedAt = Date.now();
      leader.signal('SIGKILL');
      const replacement = cluster.add('scheduler');
      const fired = await cluster.waitFor(
        () => cluster.firstFireAfter(killedAt),
        leaderTtlMs + 15_000,
        `a slot fired after kill ${i + 1}`,
      );
      failovers.push(fired - killedAt);
      await replacement;
      await sleep(1_500);
    }
    const lastSlot = Math.floor(Date.now() / 1000) * 1000 - 1000;
    await cluster.settle(lastSlot);
    const { expected, lost, doubled, unfinished, byStatus } = await cluster.report(ids, firstSlot, lastSlot);
    return {
      kills,
      leaderTtlMs,
      failovers,
      summary: summarize(failovers),
      accounting: { expected, lost, doubled, unfinished, byStatus },
    };
  } finally {
    await cluster.stop();
  }
}

/** Scenario 6 as table rows: 3 kills at the default LEADER_TTL_MS (quick: 1 kill, 1 s lease). */
export async function failoverScenario(opts: BenchOptions): Promise<ScenarioOutcome> {
  const r = opts.quick ? await benchFailover(1, 1_000) : await benchFailover(3, 5_000);
  const a = r.accounting;
  const scenario = `failover, leader kill -9 × ${r.kills}, LEADER_TTL_MS=${r.leaderTtlMs}, 10 every-second tasks`;
  const bound = r.leaderTtlMs + 1_000;
  const rows: Row[] = [
    {
      scenario,
      measure: 'kill → next fired slot (each kill)',
      punctual: r.failovers.map((f) => ms(f)).join(', '),
      peer: '— (job schedulers have no leader)',
      ratio: '—',
      target: `≤ ${ms(bound)}`,
      met: r.summary.max <= bound,
    },
    {
      scenario,
      measure: 'slots: duplicates / losses / unfinished',
      punctual: `${a.doubled.length} / ${a.lost.length} / ${a.unfinished.length} of ${a.expected}`,
      peer: '—',
      ratio: '—',
      target: '0 / 0 / 0',
      met: a.doubled.length + a.lost.length + a.unfinished.length === 0,
    },
  ];
  const problems = [
    ...a.lost.map((l) => `failover: lost ${l}`),
    ...a.doubled.map((d) => `failover: execution ${d} succeeded twice`),
    ...(a.unfinished.length ? [`failover: ${a.unfinished.length} executions unfinished`] : []),
  ];
  return { rows, data: r, problems };
}
