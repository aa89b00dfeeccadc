import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { KNOWN_ENV_NAMES, loadConfig } from '../../libs/config/src/index.js';
import {
  configData,
  deployment,
  CUSTOM_KINDS,
  EXAMPLE_SECRET,
  type K8sObject,
  RENDERS,
  ROLES,
  ROOT,
  secretData,
  selects,
  typeKey,
  validateModel,
  workloads,
} from './manifests.js';

// Invariants every rendering of deploy/k8s keeps (overlays alone and with components); the
// components themselves and the differences between overlays: kubernetes-components.test.ts.
const SCRIPTS = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts as Record<string, string>;
const IMAGE_UID = Number(/^USER (\d+)/m.exec(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'))?.[1]);

const containers = (objects: K8sObject[]) =>
  workloads(objects).flatMap((w) =>
    [...(w.pod.initContainers ?? []), ...w.pod.containers].map((c) => ({ ...w, container: c })),
  );
const autoscalers = (objects: K8sObject[]) =>
  objects.filter((o) => o.kind === 'HorizontalPodAutoscaler' || o.kind === 'ScaledObject');

describe.each(RENDERS)('kubernetes: $label', ({ overlay, components, objects }) => {
  const config = loadConfig({ ...configData(objects), ...secretData(objects) });

  it('renders only valid objects of known kinds, all in one namespace', () => {
    for (const object of objects) {
      if (CUSTOM_KINDS.has(typeKey(object))) continue;
      expect(() => validateModel(object), `${object.kind}/${object.metadata.name}`).not.toThrow();
    }
    const namespaces = objects.filter((o) => o.kind === 'Namespace').map((o) => o.metadata.name);
    expect(namespaces).toEqual([overlay === 'dev' ? 'punctual-dev' : 'punctual']);
    const elsewhere = objects.filter((o) => o.kind !== 'Namespace' && o.metadata.namespace !== namespaces[0]);
    expect(elsewhere.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual([]);
  });

  it('runs each role with its package.json command, and probes every Deployment container', () => {
    for (const role of ROLES) {
      const container = deployment(objects, role).spec.template.spec.containers[0];
      expect(container.command, role).toEqual(SCRIPTS[`start:${role}`]!.split(' '));
    }
    for (const { name, kind, container } of containers(objects)) {
      if (kind !== 'Deployment') continue;
      expect(container.livenessProbe?.httpGet?.path, name).toBe('/health/live');
      expect(container.readinessProbe?.httpGet?.path, name).toBe('/health/ready');
      const ports = (container.ports ?? []).flatMap((p: { name?: string; containerPort: number }) => [
        p.name,
        p.containerPort,
      ]);
      for (const probe of ['livenessProbe', 'readinessProbe', 'startupProbe']) {
        if (container[probe]) expect(ports, `${name} ${probe}`).toContain(container[probe].httpGet.port);
      }
    }
  });

  it('listens where the config says: PORT for the API, HEALTH_PORT for scheduler and worker', () => {
    const port = (role: string, name: string) =>
      deployment(objects, role).spec.template.spec.containers[0].ports.find((p: { name: string }) => p.name === name)
        ?.containerPort;
    expect(port('api', 'http')).toBe(config.port);
    expect(port('scheduler', 'health')).toBe(config.healthPort);
    expect(port('worker', 'health')).toBe(config.healthPort);
  });

  it('keeps at least two schedulers behind a PodDisruptionBudget, and never autoscales them', () => {
    const scheduler = deployment(objects, 'scheduler');
    expect(scheduler.spec.replicas).toBeGreaterThanOrEqual(2);
    const labels = scheduler.spec.template.metadata.labels;
    const pdbs = objects.filter(
      (o) => o.kind === 'PodDisruptionBudget' && selects(o.spec.selector.matchLabels, labels),
    );
    expect(pdbs).toHaveLength(1);
    expect(pdbs[0]!.spec.minAvailable).toBe(1);
    const others = workloads(objects).filter((w) => w.name !== scheduler.metadata.name);
    expect(others.filter((w) => selects(pdbs[0]!.spec.selector.matchLabels, w.labels))).toEqual([]);
    expect(autoscalers(objects).filter((a) => a.spec.scaleTargetRef.name === scheduler.metadata.name)).toEqual([]);
  });

  it('scales workers with exactly one autoscaler, which alone owns their replica count', () => {
    const worker = deployment(objects, 'worker');
    const targets = autoscalers(objects).map((a) => a.spec.scaleTargetRef.name);
    expect(targets).toEqual([worker.metadata.name]);
    expect(autoscalers(objects)[0]!.kind).toBe(
      components.includes('keda') ? 'ScaledObject' : 'HorizontalPodAutoscaler',
    );
    for (const target of targets) {
      const scaled = objects.find((o) => o.kind === 'Deployment' && o.metadata.name === target);
      expect(scaled, target).toBeDefined();
      expect(scaled!.spec.replicas, `${target} must leave replicas to its autoscaler`).toBeUndefined();
    }
  });

  it('runs one image everywhere, set by the overlay', () => {
    const images = new Set(containers(objects).map((c) => c.container.image));
    expect(images.size).toBe(1);
    expect([...images][0]).toMatch(/^[\w.-]+(:\d+)?\/[\w./-]+:[\w.-]+$/);
  });

  it('sets only environment variables libs/config knows, from the documented ConfigMap and Secret', () => {
    const configMaps = objects.filter((o) => o.kind === 'ConfigMap').map((o) => o.metadata.name);
    const names = [...Object.keys(configData(objects)), ...Object.keys(secretData(objects))];
    for (const { name, container } of containers(objects)) {
      names.push(...(container.env ?? []).map((e: { name: string }) => e.name));
      for (const source of container.envFrom ?? []) {
        if (source.configMapRef) expect(configMaps, name).toContain(source.configMapRef.name);
        if (source.secretRef) expect(source.secretRef.name, name).toBe(EXAMPLE_SECRET.metadata.name);
      }
    }
    expect(names.filter((n) => !KNOWN_ENV_NAMES.includes(n))).toEqual([]);
    expect(config.nodeEnv).toBe('production');
  });

  it('gives schedulers and workers longer to stop than SHUTDOWN_GRACE_MS', () => {
    for (const role of ['scheduler', 'worker']) {
      expect(deployment(objects, role).spec.template.spec.terminationGracePeriodSeconds * 1000, role).toBeGreaterThan(
        config.shutdownGraceMs,
      );
    }
  });

  it('runs every pod as the image user, non-root, read-only, without privileges, with sized resources', () => {
    for (const { name, pod, container } of containers(objects)) {
      expect(pod.securityContext, name).toMatchObject({
        runAsNonRoot: true,
        runAsUser: IMAGE_UID,
        seccompProfile: { type: 'RuntimeDefault' },
      });
      expect(pod.automountServiceAccountToken, name).toBe(false);
      expect(container.securityContext, name).toMatchObject({
        readOnlyRootFilesystem: true,
        allowPrivilegeEscalation: false,
      });
      expect(container.securityContext.capabilities.drop, name).toContain('ALL');
      expect(container.securityContext.privileged ?? false, name).toBe(false);
      const tmp = container.volumeMounts?.find((m: { mountPath: string }) => m.mountPath === '/tmp');
      expect(pod.volumes?.find((v: { name: string }) => v.name === tmp?.name)?.emptyDir, `${name}: /tmp`).toBeDefined();
      expect(
        container.resources?.requests?.cpu && container.resources.requests.memory && container.resources.limits?.memory,
        name,
      ).toBeTruthy();
    }
    for (const { name, labels, pod, kind } of workloads(objects)) {
      if (kind !== 'Deployment') continue;
      expect(pod.topologySpreadConstraints?.length, name).toBeGreaterThan(0);
      for (const c of pod.topologySpreadConstraints)
        expect(selects(c.labelSelector.matchLabels, labels), name).toBe(true);
    }
  });

  it('routes Services and the Ingress to pods and ports that exist', () => {
    const services = objects.filter((o) => o.kind === 'Service');
    for (const service of services) {
      const [target, ...more] = workloads(objects).filter(
        (w) => w.kind === 'Deployment' && selects(service.spec.selector, w.labels),
      );
      expect(target, service.metadata.name).toBeDefined();
      expect(more, service.metadata.name).toEqual([]);
      const portNames = target!.pod.containers.flatMap((c: { ports?: { name: string }[] }) =>
        (c.ports ?? []).map((p) => p.name),
      );
      for (const port of service.spec.ports) expect(portNames, service.metadata.name).toContain(port.targetPort);
    }
    for (const ingress of objects.filter((o) => o.kind === 'Ingress')) {
      for (const path of ingress.spec.rules.flatMap((r: { http: { paths: unknown[] } }) => r.http.paths)) {
        const backend = (path as { backend: { service: { name: string; port: { name: string } } } }).backend.service;
        const service = services.find((s) => s.metadata.name === backend.name);
        expect(
          service?.spec.ports.map((p: { name: string }) => p.name),
          backend.name,
        ).toContain(backend.port.name);
      }
    }
  });

  it('migrates with a Job that an operator can apply alone, before the rollout', () => {
    const labelled = objects.filter((o) => o.metadata.labels?.['app.kubernetes.io/component'] === 'migrate');
    expect(labelled.map((o) => o.kind)).toEqual(['Job']);
    const job = labelled[0]!;
    const [container] = job.spec.template.spec.containers;
    expect(container.command).toEqual(['npx', 'prisma', 'migrate', 'deploy']);
    expect(job.metadata.annotations?.['argocd.argoproj.io/hook']).toBe('PreSync');
    // Applied with `-l app.kubernetes.io/component=migrate`, only the Secret exists besides it.
    expect(container.envFrom.map((s: object) => Object.keys(s)[0])).toEqual(['secretRef']);
    expect(secretData(objects).DATABASE_URL).toMatch(/^postgres(ql)?:\/\//);
  });
});
