import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { aggregatedAcross, alertRules, dashboard, observabilityQueries, selectedMetrics } from '../support/promql.js';
import { ROOT } from './manifests.js';

const DIR = join(ROOT, 'deploy/observability');
const INSTALL_PROMTOOL =
  'promtool is not installed: `apt-get install prometheus` (Debian/Ubuntu) provides it; .ci/run installs it';
const promtool = spawnSync('promtool', ['--version'], { encoding: 'utf8' }).status === 0;
if (!promtool) console.warn(`skipping the promtool checks of the alert rules: ${INSTALL_PROMTOOL}`);
const runPromtool = (...args: string[]) =>
  execFileSync('promtool', args, { cwd: DIR, encoding: 'utf8', stdio: 'pipe' });
/** Exported per task (label `task`) for the tasks that set `slo: { startWithin }`. */
const TASK_HEALTH = [
  'punctual_task_last_success_timestamp_seconds',
  'punctual_task_expected_interval_seconds',
  'punctual_task_slots_total',
  'punctual_task_late_slots_total',
];
/** How often `text` occurs in `expr` (none of the names above is a part of another). */
const occurrences = (expr: string, text: string) => expr.split(text).length - 1;

describe('Grafana dashboard', () => {
  const panels = dashboard().panels as {
    id: number;
    type: string;
    title: string;
    gridPos: { x: number; y: number; w: number; h: number };
    targets?: { expr: string }[];
    datasource?: { uid: string };
  }[];

  it('is valid PromQL throughout, each selector naming a punctual_ metric', () => {
    for (const { where, expr } of observabilityQueries()) {
      expect(
        selectedMetrics(expr).filter((name) => !name.startsWith('punctual_')),
        where,
      ).toEqual([]);
    }
  });

  it('shows every view an operator needs', () => {
    const used = new Set(
      observabilityQueries()
        .filter((q) => q.where.startsWith('panel'))
        .flatMap((q) => selectedMetrics(q.expr)),
    );
    const views = {
      'leader and failovers': ['punctual_leader', 'punctual_leader_changes_total'],
      'planned, fired, started per second': [
        'punctual_planned_total',
        'punctual_fired_total',
        'punctual_start_lag_seconds_count',
      ],
      'start lag quantiles': ['punctual_start_lag_seconds_bucket'],
      'queue depth': ['punctual_queue_depth'],
      'outcomes, skipped, missed': ['punctual_executions_total', 'punctual_skipped_total', 'punctual_missed_total'],
      'dead letters and outbox': [
        'punctual_dead_letters',
        'punctual_outbox_pending',
        'punctual_outbox_oldest_pending_seconds',
      ],
      'clock offset': ['punctual_clock_offset_seconds'],
      'worker concurrency in use': ['punctual_worker_running', 'punctual_worker_concurrency'],
      'flow control: held runs, permits, wait': [
        'punctual_flow_waiting',
        'punctual_flow_running',
        'punctual_flow_wait_seconds_bucket',
      ],
      'task health: time since last success, late slots': TASK_HEALTH,
      'failures let pass (best effort), by site': ['punctual_best_effort_failures_total'],
    };
    for (const [view, metrics] of Object.entries(views))
      expect(
        metrics.filter((m) => !used.has(m)),
        view,
      ).toEqual([]);
  });

  it('never adds up punctual_leader of different shards, in a panel or an alert', () => {
    for (const { where, expr } of observabilityQueries())
      expect(aggregatedAcross(expr, 'punctual_leader', 'shard'), where).toEqual([]);
    // What the check is for: the unsharded queries these replaced.
    expect(aggregatedAcross('sum(punctual_leader)', 'punctual_leader', 'shard')).toEqual(['sum(punctual_leader)']);
    expect(aggregatedAcross('max by (instance) (punctual_leader) == 1', 'punctual_leader', 'shard')).toEqual([
      'max by (instance) (punctual_leader)',
    ]);
    expect(
      aggregatedAcross('count(count by (shard) (punctual_leader{instance="a"}))', 'punctual_leader', 'shard'),
    ).toEqual([]);
  });

  it("has its leadership and task-health panels' queries evaluated by promtool (dashboard.test.yaml), word for word", (ctx) => {
    const tested = new Set(
      (
        parse(readFileSync(join(DIR, 'dashboard.test.yaml'), 'utf8')) as {
          tests: { promql_expr_test: { expr: string }[] }[];
        }
      ).tests.flatMap((t) => t.promql_expr_test.map((c) => c.expr)),
    );
    const titles = [
      'Shards without a leader',
      'Shard map',
      'Queue depth by state',
      'Time since last success by task',
      'Late-slot ratio by task (1h)',
    ];
    const evaluated = panels.filter((p) => titles.includes(p.title));
    expect(evaluated).toHaveLength(titles.length);
    const exprs = evaluated.flatMap((p) => p.targets!.map((t) => t.expr));
    expect([...tested].sort()).toEqual([...exprs].sort());
    if (!promtool) return ctx.skip(INSTALL_PROMTOOL);
    expect(runPromtool('test', 'rules', 'dashboard.test.yaml')).toContain('SUCCESS');
  });

  it('imports into any Grafana: unique panel ids, a 24-column grid, the Prometheus data source chosen on import', () => {
    expect(new Set(panels.map((p) => p.id)).size).toBe(panels.length);
    for (const p of panels) expect(p.gridPos.x + p.gridPos.w, p.title).toBeLessThanOrEqual(24);
    expect(dashboard().templating.list).toContainEqual(
      expect.objectContaining({ name: 'datasource', type: 'datasource', query: 'prometheus' }),
    );
    for (const p of panels.filter((p) => p.type !== 'row')) {
      expect(p.datasource?.uid, p.title).toBe('${datasource}');
      expect(p.targets?.length, p.title).toBeGreaterThan(0);
    }
  });

  it('lays its panels and rows out without overlap', () => {
    const overlaps: string[] = [];
    for (const [i, a] of panels.entries()) {
      for (const b of panels.slice(i + 1)) {
        const [p, q] = [a.gridPos, b.gridPos];
        if (p.x < q.x + q.w && q.x < p.x + p.w && p.y < q.y + q.h && q.y < p.y + p.h)
          overlaps.push(`${a.title} / ${b.title}`);
      }
    }
    expect(overlaps).toEqual([]);
  });
});

describe('task health queries, in panels and alerts', () => {
  const queries = observabilityQueries().filter((q) => selectedMetrics(q.expr).some((m) => TASK_HEALTH.includes(m)));

  it('are per task: never add up the series of different tasks', () => {
    expect(queries.length).toBeGreaterThan(0);
    for (const { where, expr } of queries)
      for (const metric of TASK_HEALTH) expect(aggregatedAcross(expr, metric, 'task'), where).toEqual([]);
  });

  it('take the max of the gauges every scheduler exports, and sum the counters of every process over a window', () => {
    const gauges = ['punctual_task_last_success_timestamp_seconds', 'punctual_task_expected_interval_seconds'];
    const counters = ['punctual_task_slots_total', 'punctual_task_late_slots_total'];
    for (const { where, expr } of queries) {
      for (const metric of gauges)
        expect(occurrences(expr, metric), `${where}: ${metric}`).toBe(occurrences(expr, `max by (task) (${metric})`));
      for (const metric of counters) {
        const summed =
          occurrences(expr, `sum by (task) (increase(${metric}[`) + occurrences(expr, `sum by (task) (rate(${metric}[`);
        expect(occurrences(expr, metric), `${where}: ${metric}`).toBe(summed);
      }
    }
  });
});

describe('alert rules', () => {
  const rules = alertRules().groups.flatMap((g) => g.rules);
  const tests = parse(readFileSync(join(DIR, 'alerts.test.yaml'), 'utf8')) as {
    tests: { name: string; alert_rule_test: { alertname: string; exp_alerts: unknown[] }[] }[];
  };
  const cases = tests.tests.flatMap((t) => t.alert_rule_test);

  it('cover what stops or endangers scheduling', () => {
    expect(rules.map((r) => r.alert).sort()).toEqual([
      'PunctualClockOffset',
      'PunctualDeadLettersGrowing',
      'PunctualHistoryPruningBehind',
      'PunctualLeaderFlapping',
      'PunctualMissedSlots',
      'PunctualNoLeader',
      'PunctualNoWorkerForHandler',
      'PunctualOutboxStuck',
      'PunctualRedisEvictionPolicy',
      'PunctualStartLagHigh',
      'PunctualTaskLateSlotsFastBurn',
      'PunctualTaskLateSlotsSlowBurn',
      'PunctualTaskNotRunning',
    ]);
    for (const rule of rules) {
      expect(['critical', 'warning'], rule.alert).toContain(rule.labels?.severity);
      expect(Object.keys(rule.annotations ?? {}).sort(), rule.alert).toEqual(['description', 'summary']);
    }
  });

  it('page for a task that stops succeeding or burns its late-slot budget fast, open a ticket when it burns slowly', () => {
    const severity = Object.fromEntries(rules.map((r) => [r.alert, r.labels?.severity]));
    expect(severity).toMatchObject({
      PunctualTaskNotRunning: 'critical',
      PunctualTaskLateSlotsFastBurn: 'critical',
      PunctualTaskLateSlotsSlowBurn: 'warning',
    });
  });

  it('each have a promtool case where they fire and one where they stay quiet', () => {
    for (const { alert } of rules) {
      expect(
        cases.some((c) => c.alertname === alert && c.exp_alerts.length > 0),
        `${alert} fires`,
      ).toBe(true);
      expect(
        cases.some((c) => c.alertname === alert && c.exp_alerts.length === 0),
        `${alert} stays quiet`,
      ).toBe(true);
    }
  });

  it('pass `promtool check rules`', (ctx) => {
    if (!promtool) return ctx.skip(INSTALL_PROMTOOL);
    expect(runPromtool('check', 'rules', 'alerts.yaml')).toContain(`SUCCESS: ${rules.length} rules found`);
  });

  it('pass their unit tests, `promtool test rules alerts.test.yaml`', (ctx) => {
    if (!promtool) return ctx.skip(INSTALL_PROMTOOL);
    expect(runPromtool('test', 'rules', 'alerts.test.yaml')).toContain('SUCCESS');
  });
});
