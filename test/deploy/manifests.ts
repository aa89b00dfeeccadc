/**
 * Renders the kustomize tree in deploy/k8s the way an operator would (`kubectl kustomize`, offline)
 * and checks the objects against the Kubernetes API schemas of kubernetes-models.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Namespace } from 'kubernetes-models/v1/Namespace';
import { Secret } from 'kubernetes-models/v1/Secret';
import { Service } from 'kubernetes-models/v1/Service';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler';
import { Job } from 'kubernetes-models/batch/v1/Job';
import { Ingress } from 'kubernetes-models/networking.k8s.io/v1/Ingress';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const K8S = join(ROOT, 'deploy/k8s');

// Loose on purpose: the tests read rendered YAML, whose shape is what they check.
export type K8sObject = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [field: string]: any;
};

/** Kinds of the Kubernetes API itself: validated against its schemas (model class, TypeScript type). */
const MODELS: Record<string, { model: new (data: never) => { validate(): void }; module: string; type: string }> = {
  'v1/Namespace': { model: Namespace, module: 'kubernetes-models/v1/Namespace', type: 'INamespace' },
  'v1/ConfigMap': { model: ConfigMap, module: 'kubernetes-models/v1/ConfigMap', type: 'IConfigMap' },
  'v1/Secret': { model: Secret, module: 'kubernetes-models/v1/Secret', type: 'ISecret' },
  'v1/Service': { model: Service, module: 'kubernetes-models/v1/Service', type: 'IService' },
  'apps/v1/Deployment': { model: Deployment, module: 'kubernetes-models/apps/v1/Deployment', type: 'IDeployment' },
  'batch/v1/Job': { model: Job, module: 'kubernetes-models/batch/v1/Job', type: 'IJob' },
  'autoscaling/v2/HorizontalPodAutoscaler': {
    model: HorizontalPodAutoscaler,
    module: 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler',
    type: 'IHorizontalPodAutoscaler',
  },
  'networking.k8s.io/v1/Ingress': {
    model: Ingress,
    module: 'kubernetes-models/networking.k8s.io/v1/Ingress',
    type: 'IIngress',
  },
  'policy/v1/PodDisruptionBudget': {
    model: PodDisruptionBudget,
    module: 'kubernetes-models/policy/v1/PodDisruptionBudget',
    type: 'IPodDisruptionBudget',
  },
};

/** Custom resources of optional operators (KEDA, Prometheus Operator): no schema here; the tests check their shape. */
export const CUSTOM_KINDS = new Set([
  'keda.sh/v1alpha1/ScaledObject',
  'keda.sh/v1alpha1/TriggerAuthentication',
  'monitoring.coreos.com/v1/ServiceMonitor',
  'monitoring.coreos.com/v1/PrometheusRule',
]);

export const typeKey = (o: K8sObject) => `${o.apiVersion}/${o.kind}`;

/**
 * `kubectl kustomize` of an overlay, with optional components added to the overlay's own
 * `components:` list — exactly the edit docs/deploying.md tells operators to make.
 */
export function render(overlay: string, components: string[] = []): K8sObject[] {
  const dir = join(K8S, overlay);
  if (components.length === 0) return parseObjects(execFileSync('kubectl', ['kustomize', dir], { encoding: 'utf8' }));
  const kustomization = parse(readFileSync(join(dir, 'kustomization.yaml'), 'utf8'));
  const temp = mkdtempSync(join(tmpdir(), 'punctual-kustomize-'));
  try {
    // kustomize refuses absolute paths: re-anchor every relative path at the temporary copy.
    const reanchor = (path: string) => relative(temp, resolve(dir, path));
    kustomization.resources = (kustomization.resources ?? []).map(reanchor);
    kustomization.components = [
      ...(kustomization.components ?? []),
      ...components.map((c) => join(K8S, 'components', c)),
    ].map((p) => (p.startsWith('/') ? relative(temp, p) : reanchor(p)));
    writeFileSync(join(temp, 'kustomization.yaml'), stringify(kustomization));
    return parseObjects(execFileSync('kubectl', ['kustomize', temp], { encoding: 'utf8' }));
  } finally {
    rmSync(temp, { recursive: true, force: true });
  }
}

export function parseObjects(text: string): K8sObject[] {
  return parseAllDocuments(text)
    .map((doc) => doc.toJSON() as K8sObject | null)
    .filter((o): o is K8sObject => o !== null);
}

/** Throws unless the object is valid against the schema of its apiVersion/kind (types, required fields, formats). */
export function validateModel(object: K8sObject): void {
  const entry = MODELS[typeKey(object)];
  if (!entry)
    throw new Error(
      `no Kubernetes model for ${typeKey(object)}: add it to MODELS, or to CUSTOM_KINDS with shape checks`,
    );
  new entry.model(object as never).validate();
}

/**
 * The schema validation above ignores unknown fields, so a typo (`livenesProbe`) would pass it. The
 * TypeScript types of the same models do not: every object is type-checked as an object literal,
 * whose excess-property check rejects any field the API does not define. Returns one line per problem.
 */
export function unknownFields(objects: K8sObject[]): string[] {
  const checked = objects.filter((o) => MODELS[typeKey(o)]);
  const imports = [...new Set(checked.map((o) => MODELS[typeKey(o)]!))].map(
    (m) => `import type { ${m.type} } from '${m.module}';`,
  );
  const lines = checked.map((o, i) => `export const o${i}: ${MODELS[typeKey(o)]!.type} = ${JSON.stringify(o)};`);
  const source = [...imports, ...lines].join('\n');
  const file = join(ROOT, 'test/deploy/__rendered_manifests__.ts');
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: [],
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
  };
  const host = ts.createCompilerHost(options);
  const { getSourceFile, fileExists, readFile } = host;
  host.getSourceFile = (name, ...rest) =>
    name === file ? ts.createSourceFile(name, source, ts.ScriptTarget.ES2022) : getSourceFile.call(host, name, ...rest);
  host.fileExists = (name) => name === file || fileExists.call(host, name);
  host.readFile = (name) => (name === file ? source : readFile.call(host, name));
  const diagnostics = ts.getPreEmitDiagnostics(ts.createProgram([file], options, host));
  return diagnostics.map((d) => {
    const line =
      d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start).line - imports.length : -1;
    const o = checked[line];
    const message = ts.flattenDiagnosticMessageText(d.messageText, '\n').split('\n').at(-1);
    return `${o ? `${o.kind}/${o.metadata.name}` : dirname(file)}: ${message}`;
  });
}

/** Pod templates of the workloads (Deployments and Jobs). */
export function workloads(objects: K8sObject[]) {
  return objects
    .filter((o) => o.kind === 'Deployment' || o.kind === 'Job')
    .map((o) => ({
      object: o,
      name: o.metadata.name,
      kind: o.kind,
      labels: o.spec.template.metadata.labels as Record<string, string>,
      pod: o.spec.template.spec,
    }));
}

export const deployment = (objects: K8sObject[], component: string) =>
  objects.find((o) => o.kind === 'Deployment' && o.metadata.labels?.['app.kubernetes.io/component'] === component)!;

/** Whether a label selector (`matchLabels` only, as these manifests use) selects the given labels. */
export const selects = (matchLabels: Record<string, string>, labels: Record<string, string> = {}) =>
  Object.keys(matchLabels).length > 0 && Object.entries(matchLabels).every(([k, v]) => labels[k] === v);

/** Every overlay, alone and with every combination of the optional components. */
export const RENDERS = ['dev', 'prod'].flatMap((overlay) =>
  [
    [],
    ['keda'],
    ['servicemonitor'],
    ['keda', 'servicemonitor'],
    ['redis-sentinel'],
    ['keda', 'redis-sentinel'],
    ['pgbouncer'],
  ].map((components) => ({
    label: [`overlays/${overlay}`, ...components.map((c) => `components/${c}`)].join(' + '),
    overlay,
    components,
    objects: render(`overlays/${overlay}`, components),
  })),
);
export const ROLES = ['api', 'scheduler', 'worker'] as const;
/** The documented shape of `punctual-secrets`, which production creates out of band. */
export const EXAMPLE_SECRET = parse(
  readFileSync(join(K8S, 'components/example-secret/secret.example.yaml'), 'utf8'),
) as K8sObject;

export const configData = (objects: K8sObject[]) =>
  objects.find((o) => o.kind === 'ConfigMap')!.data as Record<string, string>;
/** The Secret the pods read: rendered by the overlay, or (prod) the example of the one created out of band. */
export const secretData = (objects: K8sObject[]): Record<string, string> => {
  const secret = objects.find((o) => o.kind === 'Secret') ?? EXAMPLE_SECRET;
  const encoded = Object.fromEntries(
    Object.entries((secret.data ?? {}) as Record<string, string>).map(([k, v]) => [
      k,
      Buffer.from(v, 'base64').toString(),
    ]),
  );
  return { ...encoded, ...secret.stringData };
};
