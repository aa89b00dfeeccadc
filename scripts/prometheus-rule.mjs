// Writes deploy/k8s/components/servicemonitor/prometheusrule.yaml: the alert rules of
// deploy/observability/alerts.yaml wrapped as a Prometheus Operator PrometheusRule.
// Run it after changing alerts.yaml; test/deploy checks the two agree.
import { readFileSync, writeFileSync } from 'node:fs';
import { parse, stringify } from 'yaml';

const root = new URL('../', import.meta.url);
const rules = parse(readFileSync(new URL('deploy/observability/alerts.yaml', root), 'utf8'));
const resource = {
  apiVersion: 'monitoring.coreos.com/v1',
  kind: 'PrometheusRule',
  metadata: { name: 'punctual', labels: { 'app.kubernetes.io/name': 'punctual' } },
  spec: { groups: rules.groups },
};
const header =
  '# Generated from deploy/observability/alerts.yaml by `node scripts/prometheus-rule.mjs`: edit that file, then run the script.\n';
writeFileSync(
  new URL('deploy/k8s/components/servicemonitor/prometheusrule.yaml', root),
  header + stringify(resource, { lineWidth: 0 }),
);
