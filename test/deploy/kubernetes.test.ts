import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { KNOWN_ENV_NAMES, loadConfig } from '../../libs/config/src/index.js';

const K8S = fileURLToPath(new URL('../../deploy/k8s', import.meta.url));
const OVERLAYS = ['overlays/dev', 'overlays/prod', 'overlays/prod-keda'];
// Custom resources whose schemas kubernetes-models does not carry; their shape is checked below.
const CRDS = new Set(['ScaledObject', 'ServiceMonitor']);

type K8sObject = { apiVersion: string; kind: string; metadata: { name: string }; spec?: any; data?: Record<string, string>; stringData?: Record<string, string> };

function render(overlay: string): K8sObject[] {
  const out = execFileSync('kubectl', ['kustomize', `${K8S}/${overlay}`], { encoding: 'utf8' });
  return parseAllDocuments(out).map((d) => d.toJSON() as K8sObject).filter(Boolean);
}

async function validate(object: K8sObject): Promise<void> {
  const [group, version] = object.apiVersion.includes('/') ? object.apiVersion.split('/') : ['', object.apiVersion];
  const module = await import(`kubernetes-models/${group ? `${group}/` : ''}${version}/${object.kind}`);
  new (module.default ?? module[object.kind])(object).validate();
}

const podSpecs = (objects: K8sObject[]) =>
  objects.filter((o) => o.kind === 'Deployment' || o.kind === 'Job').map((o) => ({ name: o.metadata.name, kind: o.kind, pod: o.spec.template.spec, labels: o.spec.template.metadata.labels }));

describe.each(OVERLAYS)('kubernetes manifests: %s', (overlay) => {
  const objects = render(overlay);

  it('every object is valid against the Kubernetes schemas', async () => {
    expect(objects.length).toBeGreaterThan(8);
    for (const object of objects) {
      if (CRDS.has(object.kind)) continue;
      await expect(validate(object), `${object.kind}/${object.metadata.name}`).resolves.toBeUndefined();
    }
  });

  it('has probes on every long-running container, one image everywhere, hardened pods', () => {
    const images = new Set<string>();
    for (const { name, kind, pod } of podSpecs(objects)) {
      expect(pod.securityContext.runAsNonRoot, name).toBe(true);
      for (const container of pod.containers) {
        images.add(container.image);
        expect(container.securityContext, name).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } });
        expect(container.resources?.limits?.memory, name).toBeTruthy();
        if (kind === 'Deployment') {
          expect(container.livenessProbe?.httpGet?.path, name).toBe('/health/live');
          expect(container.readinessProbe?.httpGet?.path, name).toBe('/health/ready');
        }
      }
    }
    expect(images.size).toBe(1);
    expect([...images][0]).toMatch(/^ghcr\.io\/example\/punctual:/);
  });

  it('gives the scheduler a PDB and no autoscaler, and the worker one', () => {
    const pdb = objects.find((o) => o.kind === 'PodDisruptionBudget');
    expect(pdb?.spec.selector.matchLabels).toEqual({ 'app.kubernetes.io/name': 'punctual-scheduler' });
    expect(pdb?.spec.minAvailable).toBe(1);
    const scheduler = objects.find((o) => o.kind === 'Deployment' && o.metadata.name === 'punctual-scheduler')!;
    expect(scheduler.spec.replicas).toBe(2);
    const scalers = objects.filter((o) => o.kind === 'HorizontalPodAutoscaler' || o.kind === 'ScaledObject');
    expect(scalers.map((s) => s.spec.scaleTargetRef.name)).toEqual(['punctual-worker']);
  });

  it('lets running work finish: grace period above SHUTDOWN_GRACE_MS', () => {
    const config = objects.find((o) => o.kind === 'ConfigMap')!;
    const grace = loadConfig({ SHUTDOWN_GRACE_MS: config.data!.SHUTDOWN_GRACE_MS }).shutdownGraceMs;
    for (const name of ['punctual-scheduler', 'punctual-worker']) {
      const pod = podSpecs(objects).find((p) => p.name === name)!.pod;
      expect(pod.terminationGracePeriodSeconds * 1000, name).toBeGreaterThan(grace);
    }
  });

  it('uses only environment variables the config knows, with values it accepts', () => {
    const config = objects.find((o) => o.kind === 'ConfigMap')!;
    const secret = objects.find((o) => o.kind === 'Secret')!;
    const names = [
      ...Object.keys(config.data!),
      ...Object.keys(secret.stringData ?? secret.data ?? {}),
      ...podSpecs(objects).flatMap(({ pod }) => pod.containers.flatMap((c: { env?: { name: string }[] }) => (c.env ?? []).map((e) => e.name))),
    ];
    expect(names.filter((n) => !KNOWN_ENV_NAMES.includes(n))).toEqual([]);
    expect(() => loadConfig({ ...config.data, ...secret.stringData })).not.toThrow();
    expect(config.data!.NODE_ENV).toBe('production');
  });

  it('shapes its custom resources as their operators expect', () => {
    for (const object of objects.filter((o) => CRDS.has(o.kind))) {
      if (object.kind === 'ScaledObject') {
        expect(object.apiVersion).toBe('keda.sh/v1alpha1');
        expect(object.spec.triggers[0]).toMatchObject({ type: 'redis', metadata: { listName: 'punctual:executions:wait' } });
      } else {
        expect(object.apiVersion).toBe('monitoring.coreos.com/v1');
        expect(object.spec.endpoints[0]).toMatchObject({ port: 'health', path: '/metrics' });
      }
    }
  });
});
