import { BATCH_MAX } from '@punctual/contract';
import { Cluster } from '../../test/support/cluster.js';
import { openSandbox } from '../../test/support/sandbox.js';
import type { BenchOptions } from '../support/options.js';
import type { Row, ScenarioOutcome } from '../support/report.js';
import { ms, summarize } from '../support/stats.js';

export interface BatchCreateResult {
  tasks: number;
  calls: number;
  totalSeconds: number;
  /** ms per `POST /v1/tasks:batch` of BATCH_MAX one-off tasks. */
  perCall: ReturnType<typeof summarize>;
  stored: number;
  auditEntries: number;
}

/**
 * The creation half of DESIGN §10's campaign: 100,000 one-off tasks (quick: 10,000) created through
 * `POST /v1/tasks:batch` in calls of 1,000, one after another, against a real API process. Checks
 * that every task and one audit entry per task were stored.
 */
export async function benchBatchCreate(tasks: number): Promise<BatchCreateResult> {
  const sandbox = await openSandbox(undefined, 'bench');
  const cluster = await Cluster.start({ schedulers: 0, workers: 0, api: true, sandbox, env: { LOG_LEVEL: 'warn' } });
  try {
    const runAt = new Date(Date.now() + 3_600_000).toISOString();
    const perCall: number[] = [];
    const started = performance.now();
    for (let offset = 0; offset < tasks; offset += BATCH_MAX) {
      const batch = Array.from({ length: Math.min(BATCH_MAX, tasks - offset) }, (_, i) => ({ name: `campaign-${offset + i}`, handler: 'noop', schedule: { at: runAt }, labels: { campaign: 'bench' } }));
      const t0 = performance.now();
      const res = await cluster.call('POST', '/v1/tasks:batch', { tasks: batch });
      perCall.push(performance.now() - t0);
      if (res.status !== 200) throw new Error(`batch at ${offset} answered ${res.status}: ${JSON.stringify(res.body).slice(0, 300)}`);
    }
    const totalSeconds = (performance.now() - started) / 1000;
    const counts = await cluster.db.query<{ tasks: string; audit: string }>(`SELECT (SELECT count(*) FROM task) AS tasks, (SELECT count(*) FROM audit_log WHERE action = 'task.create') AS audit`);
    return { tasks, calls: perCall.length, totalSeconds, perCall: summarize(perCall), stored: Number(counts.rows[0]!.tasks), auditEntries: Number(counts.rows[0]!.audit) };
  } finally {
    await cluster.stop();
  }
}

export async function batchCreateScenario(opts: BenchOptions): Promise<ScenarioOutcome> {
  const r = await benchBatchCreate(opts.quick ? 10_000 : 100_000);
  const scenario = `campaign creation, ${r.tasks.toLocaleString('en')} one-off tasks via POST /v1/tasks:batch (${r.calls} calls)`;
  const rows: Row[] = [
    { scenario, measure: 'created in', punctual: `${r.totalSeconds.toFixed(1)} s`, peer: '—', ratio: '—', target: r.tasks === 100_000 ? '≤ 60 s' : '—', met: r.tasks === 100_000 ? r.totalSeconds <= 60 : null },
    { scenario, measure: 'per call p50 / p99', punctual: `${ms(r.perCall.p50)} / ${ms(r.perCall.p99)}`, peer: '—', ratio: '—', target: '—', met: null },
  ];
  const problems = [
    ...(r.stored === r.tasks ? [] : [`batch-create: ${r.stored} of ${r.tasks} tasks stored`]),
    ...(r.auditEntries === r.tasks ? [] : [`batch-create: ${r.auditEntries} audit entries for ${r.tasks} tasks`]),
  ];
  return { rows, data: r, problems };
}
