import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../libs/config/src/index.js';
import { executionsQueueName } from '../../libs/queue/src/queue.constants.js';
import { alertRules } from '../support/promql.js';
import {
  configData,
  deployment,
  EXAMPLE_SECRET,
  type K8sObject,
  RENDERS,
  ROLES,
  ROOT,
  selects,
  unknownFields,
  validateModel,
} from './manifests.js';

// The optional components (KEDA, ServiceMonitor), what differs between overlays, and the checks themselves.
const withComponent = (component: string) => RENDERS.filter((r) => r.components.includes(component));

describe.each(withComponent('keda'))('kubernetes: $label', ({ objects, components }) => {
  const config = loadConfig(configData(objects));
  // Behind Sentinel KEDA reads the lists through the sentinels, from the primary they name.
  const sentinel = components.includes('redis-sentinel');

  it("scales workers on the BullMQ wait lists of the built-in handlers' queues under this REDIS_PREFIX (KEDA)", () => {
    const scaled = objects.find((o) => o.kind === 'ScaledObject')!;
    expect(scaled.apiVersion).toBe('keda.sh/v1alpha1');
    expect(scaled.spec.scaleTargetRef).toMatchObject({
      kind: 'Deployment',
      name: deployment(objects, 'worker').metadata.name,
    });
    expect(scaled.spec.minReplicaCount).toBeGreaterThanOrEqual(1);
    expect(scaled.spec.maxReplicaCount).toBeGreaterThan(scaled.spec.minReplicaCount);
    const triggers = scaled.spec.triggers as {
      type: string;
      metadata: { listName: string; sentinelMaster?: string };
      authenticationRef: { name: string };
    }[];
    expect(triggers.map((t) => t.type)).toEqual(Array(3).fill(sentinel ? 'redis-sentinel' : 'redis'));
    expect(triggers.map((t) => t.metadata.listName)).toEqual(
      ['http', 'log', 'noop'].map((h) => `${config.redisPrefix}:${executionsQueueName(h)}:wait`),
    );
    for (const trigger of triggers) {
      if (sentinel)
        expect(trigger.metadata.sentinelMaster).toBe(
          config.redisTopology.kind === 'sentinel' ? config.redisTopology.master : 'no sentinel configured',
        );
      const auth = objects.find(
        (o) => o.kind === 'TriggerAuthentication' && o.metadata.name === trigger.authenticationRef.name,
      );
      expect(auth?.spec.secretTargetRef.map((r: { parameter: string }) => r.parameter)).toContain(
        sentinel ? 'addresses' : 'address',
      );
    }
  });
});

describe.each(withComponent('redis-sentinel'))('kubernetes: $label', ({ objects }) => {
  it('reaches Redis through the sentinels in every role: the config loads as a Sentinel topology, and no role names a Redis host of its own', () => {
    const config = loadConfig({ ...configData(objects), ...EXAMPLE_SECRET.stringData });
    expect(config.redisTopology).toMatchObject({ kind: 'sentinel', master: 'mymaster' });
    expect(config.redisTopology.kind === 'sentinel' && config.redisTopology.sentinels).toHaveLength(3);
    for (const role of ROLES) {
      const env = deployment(objects, role).spec.template.spec.containers[0].env ?? [];
      expect(
        env.map((e: { name: string }) => e.name).filter((n: string) => n.startsWith('REDIS_')),
        role,
      ).toEqual([]);
    }
  });
});

describe.each(withComponent('pgbouncer'))('kubernetes: $label', ({ objects }) => {
  it('sends the API and the workers through the pooler in transaction mode, and the schedulers and the migration Job past it (DATABASE_DIRECT_URL)', () => {
    const config = loadConfig({ ...configData(objects), ...EXAMPLE_SECRET.stringData });
    expect(config.databasePooling).toBe('transaction');
    expect(config.databaseDirectUrl).toBeDefined();
    // The Job runs `prisma migrate deploy`, whose prisma.config.ts takes DATABASE_DIRECT_URL first, from the same Secret.
    const job = objects.find((o) => o.kind === 'Job')!;
    const sources = job.spec.template.spec.containers[0].envFrom.map(
      (e: { secretRef?: { name: string } }) => e.secretRef?.name,
    );
    expect(sources).toContain(EXAMPLE_SECRET.metadata.name);
    expect(readFileSync(join(ROOT, 'prisma.config.ts'), 'utf8')).toMatch(
      /process\.env\.DATABASE_DIRECT_URL \|\| process\.env\.DATABASE_URL/,
    );
  });
});

describe.each(withComponent('servicemonitor'))('kubernetes: $label', ({ objects }) => {
  it('scrapes /metrics of every role with the METRICS_TOKEN (ServiceMonitor)', () => {
    const monitor = objects.find((o) => o.kind === 'ServiceMonitor')!;
    expect(monitor.apiVersion).toBe('monitoring.coreos.com/v1');
    const services = objects.filter(
      (o) => o.kind === 'Service' && selects(monitor.spec.selector.matchLabels, o.metadata.labels),
    );
    for (const endpoint of monitor.spec.endpoints) {
      expect(endpoint.path).toBe('/metrics');
      expect(endpoint.authorization.credentials).toEqual({ name: EXAMPLE_SECRET.metadata.name, key: 'METRICS_TOKEN' });
    }
    const ports = monitor.spec.endpoints.map((e: { port: string }) => e.port);
    for (const role of ROLES) {
      const labels = deployment(objects, role).spec.template.metadata.labels;
      const scraped = services.filter(
        (s) => selects(s.spec.selector, labels) && s.spec.ports.some((p: { name: string }) => ports.includes(p.name)),
      );
      expect(scraped.length, role).toBeGreaterThan(0);
    }
  });

  it('loads the alert rules of deploy/observability/alerts.yaml (PrometheusRule)', () => {
    const rule = objects.find((o) => o.kind === 'PrometheusRule')!;
    expect(rule.apiVersion).toBe('monitoring.coreos.com/v1');
    expect(rule.metadata.namespace).toBe(deployment(objects, 'scheduler').metadata.namespace);
    expect(rule.metadata.labels).toMatchObject({ 'app.kubernetes.io/name': 'punctual' });
    // Generated by scripts/prometheus-rule.mjs: run it after changing alerts.yaml.
    expect(rule.spec.groups).toEqual(alertRules().groups);
  });
});

describe('kubernetes: across renders', () => {
  const find = (overlay: string) => RENDERS.find((r) => r.overlay === overlay && r.components.length === 0)!.objects;
  const [dev, prod] = [find('dev'), find('prod')];
  const mebibytes = (q: string) => Number.parseFloat(q) * ({ Mi: 1, Gi: 1024 }[q.replace(/^[\d.]+/, '')] ?? Number.NaN);

  it('declares no field the Kubernetes API does not know (a typo would be dropped or refused)', () => {
    expect(unknownFields(RENDERS.flatMap((r) => r.objects))).toEqual([]);
  });

  it('never ships a Secret to production; the example one is clearly a placeholder', () => {
    expect(prod.filter((o) => o.kind === 'Secret')).toEqual([]);
    expect(Object.keys(EXAMPLE_SECRET.stringData).sort()).toEqual([
      'ADMIN_API_KEY',
      'DATABASE_DIRECT_URL',
      'DATABASE_URL',
      'METRICS_TOKEN',
      'REDIS_URL',
    ]);
    for (const [key, value] of Object.entries(EXAMPLE_SECRET.stringData as Record<string, string>))
      expect(value, key).toContain('CHANGE-ME');
  });

  it('runs three schedulers in production, leading 16 shards between them; one shard elsewhere', () => {
    const config = (objects: K8sObject[]) =>
      objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name.startsWith('punctual-config'))!.data;
    expect(deployment(prod, 'scheduler').spec.replicas).toBe(3);
    expect(config(prod).SCHEDULER_SHARDS).toBe('16');
    expect(config(dev).SCHEDULER_SHARDS).toBe('1');
  });

  it('gives production more API replicas, more workers and bigger pods than dev', () => {
    expect(deployment(prod, 'api').spec.replicas).toBeGreaterThan(deployment(dev, 'api').spec.replicas);
    const hpa = (objects: K8sObject[]) => objects.find((o) => o.kind === 'HorizontalPodAutoscaler')!.spec;
    expect(hpa(prod).minReplicas).toBeGreaterThan(hpa(dev).minReplicas);
    expect(hpa(prod).maxReplicas).toBeGreaterThan(hpa(dev).maxReplicas);
    for (const role of ROLES) {
      const memory = (objects: K8sObject[]) =>
        mebibytes(deployment(objects, role).spec.template.spec.containers[0].resources.requests.memory);
      expect(memory(prod), role).toBeGreaterThan(memory(dev));
    }
  });
});

describe('kubernetes: the checks themselves', () => {
  const sample = () => structuredClone(deployment(RENDERS[0]!.objects, 'worker'));

  it('reject an object that breaks its schema, and kinds they cannot check', () => {
    expect(() => validateModel({ ...sample(), spec: { ...sample().spec, replicas: 'two' } })).toThrow(/replicas/);
    expect(() => validateModel({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' } })).toThrow(
      /no Kubernetes model/,
    );
  });

  it('report a misspelt field', () => {
    const typo = sample();
    typo.spec.template.spec.containers[0].livenesProbe = typo.spec.template.spec.containers[0].livenessProbe;
    expect(unknownFields([typo])).toEqual([expect.stringMatching(/^Deployment\/punctual-worker: .*livenesProbe/)]);
  });
});
