import { OwnPgBouncer, pgbouncerUnavailable } from '../../test/support/pgbouncer.js';
import type { BenchOptions } from '../support/options.js';
import type { Cost } from '../support/cost.js';
import { ratio, type Row, type ScenarioOutcome } from '../support/report.js';
import { ms } from '../support/stats.js';
import { punctualPrecision } from './precision.js';

/** Postgres work of a run: statements when pg_stat_statements is loaded, else transactions. */
const perRunWork = (cost: Cost) => (cost.runs === 0 ? Number.NaN : (cost.statements ?? cost.transactions) / cost.runs);
const workUnit = (cost: Cost) => (cost.statements === null ? 'transactions' : 'statements');

/**
 * DESIGN §10's load (every-second tasks, one scheduler, one worker) twice in one run: with every
 * role on Postgres directly, then with the worker on a PgBouncer in transaction mode
 * (DATABASE_POOLING=transaction: no named statements, so each hot statement is parsed again; the
 * scheduler on DATABASE_DIRECT_URL). Target: a run costs through PgBouncer within 1.3× of direct.
 */
export async function pgbouncerScenario(opts: BenchOptions): Promise<ScenarioOutcome> {
  const why = pgbouncerUnavailable();
  if (why)
    return {
      rows: [
        { scenario: 'pgbouncer', measure: 'skipped', punctual: why, peer: '—', ratio: '—', target: '—', met: null },
      ],
      data: { skipped: why },
      problems: [],
    };
  const tasks = opts.quick ? 100 : 1_000;
  const seconds = opts.quick ? 5 : 20;
  const direct = await punctualPrecision(tasks, seconds);
  const bouncer = await OwnPgBouncer.start({ host: '127.0.0.1', port: 5432 });
  let pooled: Awaited<ReturnType<typeof punctualPrecision>>;
  try {
    pooled = await punctualPrecision(tasks, seconds, (databaseUrl) => ({
      DATABASE_URL: bouncer.urlFor(databaseUrl),
      DATABASE_POOLING: 'transaction',
      DATABASE_DIRECT_URL: databaseUrl,
    }));
  } finally {
    await bouncer.stop();
  }
  const scenario = `pgbouncer, ${tasks.toLocaleString('en')} tasks every second, ${seconds} s, through PgBouncer 1.18 (transaction mode) vs direct`;
  const [work, directWork] = [perRunWork(pooled.cost), perRunWork(direct.cost)];
  const rows: Row[] = [
    {
      scenario,
      measure: 'start lag p50',
      punctual: ms(pooled.lag.p50),
      peer: `direct ${ms(direct.lag.p50)}`,
      ratio: ratio(pooled.lag.p50, direct.lag.p50),
      target: '—',
      met: null,
    },
    {
      scenario,
      measure: 'start lag p99',
      punctual: ms(pooled.lag.p99),
      peer: ms(direct.lag.p99),
      ratio: ratio(pooled.lag.p99, direct.lag.p99),
      target: '—',
      met: null,
    },
    {
      scenario,
      measure: `Postgres ${workUnit(pooled.cost)} per successful run`,
      punctual: work.toFixed(1),
      peer: directWork.toFixed(1),
      ratio: ratio(work, directWork),
      target: '≤ 1.3× direct',
      met: work <= 1.3 * directWork,
    },
    {
      scenario,
      measure: 'slots (each ends once)',
      punctual: Object.entries(pooled.accounting.byStatus)
        .map(([status, n]) => `${n} ${status}`)
        .join(', '),
      peer: Object.entries(direct.accounting.byStatus)
        .map(([status, n]) => `${n} ${status}`)
        .join(', '),
      ratio: '—',
      target: 'none lost or doubled',
      met: [pooled, direct].every(
        (r) => r.accounting.lost.length + r.accounting.doubled.length + r.accounting.unfinished.length === 0,
      ),
    },
  ];
  const problems: string[] = [];
  for (const [side, r] of [
    ['through PgBouncer', pooled],
    ['direct', direct],
  ] as const) {
    const a = r.accounting;
    if (a.lost.length) problems.push(`pgbouncer (${side}): lost slots ${a.lost.join('; ')}`);
    if (a.doubled.length) problems.push(`pgbouncer (${side}): slots that succeeded twice ${a.doubled.join(', ')}`);
    if (a.unfinished.length) problems.push(`pgbouncer (${side}): unfinished ${a.unfinished.length}`);
  }
  return { rows, data: { tasks, seconds, direct, pooled }, problems };
}
