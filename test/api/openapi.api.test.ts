import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createConfig, lintFromString } from '@redocly/openapi-core';
import { ERROR_CODES, type RouteDef, routes } from '@punctual/contract';
import openapiTS, { astToString } from 'openapi-typescript';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { useApiSandbox } from '../support/api-sandbox.js';

type Operation = {
  operationId: string;
  summary?: string;
  parameters?: { name: string; in: string }[];
  requestBody?: unknown;
  responses: Record<string, { content?: Record<string, { schema?: { $ref?: string } }> }>;
};

const OUT = fileURLToPath(new URL('../artifacts/openapi/', import.meta.url));

describe('OpenAPI document', () => {
  const ctx = useApiSandbox();
  const document = async () => (await ctx.api.call('GET', '/docs-json')).body;
  const operations = async () =>
    Object.entries((await document()).paths as Record<string, Record<string, Operation>>).flatMap(([path, ops]) =>
      Object.entries(ops).map(([method, op]) => ({ key: `${method} ${path}`, path, method, op })),
    );

  it('is valid OpenAPI: Redocly reports no errors', async () => {
    const problems = await lintFromString({
      source: JSON.stringify(await document()),
      absoluteRef: 'openapi.json',
      config: await createConfig({ extends: ['recommended'] }),
    });
    const errors = problems
      .filter((p) => p.severity === 'error')
      .map((p) => `${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`);
    expect(errors).toEqual([]);
  });

  it('documents every route with a typed 2xx response, the error envelope for 4xx and every query parameter', async () => {
    const ops = await operations();
    expect(ops.map((o) => o.key).sort()).toEqual(
      [
        'get /v1/tasks',
        'post /v1/tasks',
        'post /v1/tasks:batch',
        'post /v1/tasks:apply',
        'put /v1/tasks/{name}',
        'patch /v1/tasks/{name}',
        'get /v1/tasks/{name}',
        'delete /v1/tasks/{name}',
        'post /v1/tasks/{name}/pause',
        'post /v1/tasks/{name}/resume',
        'post /v1/tasks/{name}/trigger',
        'post /v1/tasks/{name}/backfill',
        'get /v1/tasks/{name}/executions',
        'get /v1/tasks/{name}/timeline',
        'get /v1/tasks/{name}/versions',
        'get /v1/tasks/{name}/versions/{version}',
        'post /v1/tasks/{name}/rollback',
        'get /v1/executions',
        'get /v1/executions/{id}',
        'post /v1/executions/{id}/retry',
        'post /v1/executions/{id}/cancel',
        'post /v1/schedules/preview',
        'get /v1/calendars',
        'get /v1/calendars/{name}',
        'get /v1/calendars/{name}/days',
        'put /v1/calendars/{name}',
        'delete /v1/calendars/{name}',
        'get /v1/handlers',
        'get /v1/cluster',
        'get /v1/me',
        'post /v1/api-keys',
        'get /v1/api-keys',
        'delete /v1/api-keys/{id}',
        'get /v1/namespaces',
        'get /v1/namespaces/{namespace}',
        'put /v1/namespaces/{namespace}',
        'delete /v1/namespaces/{namespace}',
        'get /v1/audit',
      ].sort(),
    );
    for (const { key, op } of ops) {
      expect(op.summary, key).toBeTruthy();
      const success = Object.entries(op.responses).filter(([status]) => status.startsWith('2'));
      expect(success.length, `${key} has a 2xx`).toBeGreaterThan(0);
      for (const [status, response] of success)
        if (status !== '204')
          expect(response.content?.['application/json']?.schema?.$ref, `${key} ${status} is typed`).toMatch(
            /^#\/components\/schemas\//,
          );
      for (const status of ['400', '401', '403', '404', '422'])
        expect(op.responses[status]?.content?.['application/json']?.schema?.$ref, `${key} ${status}`).toBe(
          '#/components/schemas/Error',
        );
      const route = routes[op.operationId as keyof typeof routes];
      const declared = (op.parameters ?? [])
        .filter((p) => p.in === 'query')
        .map((p) => p.name)
        .sort();
      const shape = (route as { query?: { shape: object } }).query?.shape ?? {};
      // Every route of a namespace takes `?namespace=` beside its own parameters.
      const own = [...Object.keys(shape), ...((route as RouteDef).cluster ? [] : ['namespace'])];
      expect(declared, `${key} query parameters`).toEqual(own.sort());
    }
  });

  it("types the error envelope's code as the contract's enum of codes", async () => {
    const { schemas } = (await document()).components;
    expect(schemas.Error.properties.error.properties.code).toEqual({ $ref: '#/components/schemas/ErrorCode' });
    expect(schemas.ErrorCode).toMatchObject({ type: 'string', enum: [...ERROR_CODES] });
  });

  it('documents only routes the API serves', async () => {
    for (const { key, path, method } of await operations()) {
      const url = path.replace('{name}', 'openapi-probe').replace('{id}', '00000000-0000-4000-8000-000000000000');
      const res = await ctx.api.call(
        method.toUpperCase(),
        url,
        method === 'get' || method === 'delete' ? undefined : {},
      );
      expect(res.body?.error?.message, key).not.toBe('no such route');
    }
  });

  it('generates TypeScript types with openapi-typescript that a small client type-checks against and runs with', async () => {
    mkdirSync(OUT, { recursive: true });
    writeFileSync(`${OUT}schema.d.ts`, astToString(await openapiTS(await document())));
    writeFileSync(
      `${OUT}client.ts`,
      `import type { components, paths } from './schema.js';

type Json<T> = T extends { content: { 'application/json': infer B } } ? B : never;
export type TaskSpec = Json<paths['/v1/tasks']['post']['requestBody']>;
export type CreatedTask = Json<paths['/v1/tasks']['post']['responses'][201]>;
export type TaskPage = Json<paths['/v1/tasks']['get']['responses'][200]>;
export type ListQuery = NonNullable<paths['/v1/tasks']['get']['parameters']['query']>;
export type ApiError = components['schemas']['Error'];

export async function createTask(base: string, key: string, spec: TaskSpec): Promise<CreatedTask> {
  const res = await fetch(base + '/v1/tasks', { method: 'POST', headers: { authorization: 'Bearer ' + key, 'content-type': 'application/json' }, body: JSON.stringify(spec) });
  if (!res.ok) throw new Error(((await res.json()) as ApiError).error.code);
  return (await res.json()) as CreatedTask;
}

export async function listTasks(base: string, key: string, query: ListQuery): Promise<TaskPage> {
  const params = new URLSearchParams();
  if (query.limit !== undefined) params.set('limit', String(query.limit));
  for (const label of query.label ?? []) params.append('label', label);
  const res = await fetch(base + '/v1/tasks?' + params.toString(), { headers: { authorization: 'Bearer ' + key } });
  return (await res.json()) as TaskPage;
}

export const known: ApiError['error']['code'] = 'not_found';
// @ts-expect-error the API answers only the contract's codes
export const unknown: ApiError['error']['code'] = 'http_415';

export const spec: TaskSpec = { name: 'typed-client', handler: 'noop', schedule: { cron: '0 9 * * *', timezone: 'Europe/Berlin' }, labels: { team: 'billing' }, managedBy: null };
// @ts-expect-error a task spec needs a handler
export const missingHandler: TaskSpec = { name: 'x', schedule: { cron: '* * * * *' } };
export function managedByOf(task: CreatedTask): string | null {
  const warnings: string[] = task.warnings;
  return warnings.length >= 0 ? task.managedBy : null;
}
`,
    );
    const program = ts.createProgram([`${OUT}client.ts`], {
      strict: true,
      noEmit: true,
      target: ts.ScriptTarget.ES2023,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      lib: ['lib.es2023.d.ts', 'lib.dom.d.ts'],
      types: [],
      skipLibCheck: false,
    });
    const diagnostics = ts
      .getPreEmitDiagnostics(program)
      .map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    expect(diagnostics).toEqual([]);

    const client = await import(`${OUT}client.ts`);
    const created = await client.createTask(ctx.api.base, ctx.api.config.adminApiKey, client.spec);
    expect(created).toMatchObject({ name: 'typed-client', labels: { team: 'billing' }, managedBy: null });
    const page = await client.listTasks(ctx.api.base, ctx.api.config.adminApiKey, {
      limit: 10,
      label: ['team=billing'],
    });
    expect(page.items.map((t: { name: string }) => t.name)).toEqual(['typed-client']);
  });
});
