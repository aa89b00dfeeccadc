/**
 * The PromQL of deploy/observability (the Grafana dashboard and the alert rules) and the metric
 * names it selects, read with the Prometheus project's own PromQL grammar (lezer-promql).
 */
import { readFileSync } from 'node:fs';
import { parser } from '@prometheus-io/lezer-promql';
import { parse } from 'yaml';

type SyntaxNode = ReturnType<typeof parser.parse>['topNode'];

const DIR = new URL('../../deploy/observability/', import.meta.url);

export interface Query {
  /** Where it is used: `panel "Leader"` or `alert PunctualNoLeader`. */
  where: string;
  expr: string;
}

export const dashboard = () => JSON.parse(readFileSync(new URL('grafana-dashboard.json', DIR), 'utf8'));
export const alertRules = () =>
  parse(readFileSync(new URL('alerts.yaml', DIR), 'utf8')) as {
    groups: {
      name: string;
      rules: { alert: string; expr: string; labels?: Record<string, string>; annotations?: Record<string, string> }[];
    }[];
  };

/** Every query of the dashboard's panels and every alert expression. */
export function observabilityQueries(): Query[] {
  const panels = (dashboard().panels as { title: string; targets?: { expr: string }[] }[]).flatMap((p) =>
    (p.targets ?? []).map((t) => ({ where: `panel "${p.title}"`, expr: t.expr })),
  );
  const alerts = alertRules().groups.flatMap((g) => g.rules.map((r) => ({ where: `alert ${r.alert}`, expr: r.expr })));
  return [...panels, ...alerts];
}

/** Grafana's interval variables, replaced by a duration so the expression is plain PromQL. */
const withoutGrafanaVariables = (expr: string) => expr.replace(/\$__(rate_interval|interval|range)\b/g, '5m');

/**
 * The metric names an expression selects. Throws on a syntax error, and on a selector without a
 * metric name (`{__name__=~"…"}`), which no check of names could vouch for.
 */
export function selectedMetrics(expr: string): string[] {
  const text = withoutGrafanaVariables(expr);
  const names = new Set<string>();
  const problems: string[] = [];
  parser.parse(text).iterate({
    enter(node) {
      if (node.type.isError)
        problems.push(`syntax error at ${node.from}: "${text.slice(Math.max(0, node.from - 10), node.to + 10)}"`);
      if (node.name === 'VectorSelector') {
        const identifier = node.node.getChild('Identifier');
        if (identifier) names.add(text.slice(identifier.from, identifier.to));
        else problems.push(`a selector without a metric name: ${text.slice(node.from, node.to)}`);
      }
    },
  });
  if (problems.length > 0) throw new Error(`${expr}: ${problems.join('; ')}`);
  return [...names];
}

/**
 * The selectors of `metric` in `expr` whose series are added up across `label`: neither pinned to
 * one value of it (`{shard="0"}`), nor kept apart by the aggregation that first reads them
 * (`by (shard)`), nor only looked for (`absent`). Summing punctual_leader that way counts the
 * leaders of different shards as one.
 */
export function aggregatedAcross(expr: string, metric: string, label: string): string[] {
  const text = withoutGrafanaVariables(expr);
  const slice = (node: SyntaxNode) => text.slice(node.from, node.to);
  const found: string[] = [];
  parser.parse(text).iterate({
    enter(ref) {
      if (ref.name !== 'VectorSelector') return;
      const selector = ref.node;
      if (slice(selector.getChild('Identifier') ?? selector) !== metric) return;
      const matchers = selector.getChild('LabelMatchers')?.getChildren('UnquotedLabelMatcher') ?? [];
      if (
        matchers.some((m) => slice(m.getChild('LabelName')!) === label && m.getChild('MatchOp')?.getChild('EqlSingle'))
      )
        return;
      for (let up = selector.parent; up; up = up.parent) {
        if (up.name === 'FunctionCall' && up.getChild('FunctionIdentifier')?.getChild('Absent')) return;
        if (up.name !== 'AggregateExpr') continue;
        const modifier = up.getChild('AggregateModifier');
        const grouping = (modifier?.getChild('GroupingLabels')?.getChildren('LabelName') ?? []).map(slice);
        const kept = modifier?.getChild('By')
          ? grouping.includes(label)
          : modifier?.getChild('Without')
            ? !grouping.includes(label)
            : false;
        if (!kept) found.push(slice(up));
        return;
      }
    },
  });
  return found;
}

/**
 * The metric families a Prometheus text exposition declares (`# TYPE` lines) or has samples of,
 * with their types. A histogram's samples are its `_bucket`, `_sum` and `_count` series.
 */
export function exportedMetrics(exposition: string): Map<string, string> {
  const families = new Map<string, string>();
  for (const line of exposition.split('\n')) {
    const declared = /^# TYPE (\S+) (\S+)/.exec(line);
    if (declared) families.set(declared[1]!, declared[2]!);
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)[{ ]/.exec(line);
    if (sample && !families.has(sample[1]!)) families.set(sample[1]!, 'untyped');
  }
  return families;
}

/** Whether `name`, as a query selects it, is a series of one of the exported families. */
export function isExported(name: string, families: Map<string, string>): boolean {
  if (families.has(name)) return true;
  const [, family, suffix] = /^(.*)_(bucket|sum|count)$/.exec(name) ?? [];
  const type = family ? families.get(family) : undefined;
  return type === 'histogram' || (type === 'summary' && suffix !== 'bucket');
}
