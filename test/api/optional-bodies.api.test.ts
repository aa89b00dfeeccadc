import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isBodyOptional, type RouteDef, routes } from '@punctual/contract';
import { afterAll, describe, expect, it } from 'vitest';
import { useApiSandbox } from '../support/api-sandbox.js';
import { callsOfEveryOperation, type OpenApiDocument, typeCheckCalls } from './openapi-calls.js';

const ARTIFACTS = fileURLToPath(new URL('../artifacts/', import.meta.url));
const TASK = 'optional-body';
/** The ways a caller leaves a body out: none at all, an empty JSON one, an empty object. */
const LEFT_OUT: Record<string, { headers: Record<string, string>; body?: string }> = {
  'no body': { headers: {} },
  'an empty body': { headers: { 'content-type': 'application/json' }, body: '' },
  '{}': { headers: { 'content-type': 'application/json' }, body: '{}' },
};

describe('optional request bodies', () => {
  const ctx = useApiSandbox();
  const document = async () => (await ctx.api.call('GET', '/docs-json')).body as OpenApiDocument;
  const optionalRoutes = Object.entries(routes).filter(([, route]) => isBodyOptional(route)) as [string, RouteDef][];
  const dirs: string[] = [];
  const scratch = () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    dirs.push(mkdtempSync(join(ARTIFACTS, 'openapi-fetch-')));
    return dirs.at(-1)!;
  };
  afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

  it('are declared requestBody.required: false, pause, resume and trigger among them; every other body is required', async () => {
    const declared = Object.values((await document()).paths).flatMap((operations) =>
      Object.values(operations).flatMap((op) =>
        op.requestBody ? [[op.operationId, op.requestBody.required] as const] : [],
      ),
    );
    const optional = declared.filter(([, required]) => required === false).map(([id]) => id);
    expect(optional).toEqual(expect.arrayContaining(['pauseTask', 'resumeTask', 'triggerTask']));
    expect(optional.sort()).toEqual(optionalRoutes.map(([id]) => id).sort());
    expect(declared.filter(([, required]) => required !== false).every(([, required]) => required === true)).toBe(true);
  });

  it('may be left out: the API answers each route without one as with {}', async () => {
    expect(
      (await ctx.api.call('POST', '/v1/tasks', { name: TASK, handler: 'noop', schedule: { cron: '0 9 * * *' } }))
        .status,
    ).toBe(201);
    // An existing namespace: a PUT without a body replaces it (200) as one with {} does.
    expect((await ctx.api.call('PUT', '/v1/namespaces/optional-bodies', {})).status).toBe(201);
    for (const [id, route] of optionalRoutes) {
      const path = route.path.replace(/\{(\w+)\}/g, (_, name: string) => {
        if (name === 'namespace') return 'optional-bodies';
        if (name !== 'name') throw new Error(`${id}: no value for {${name}} here`);
        return TASK;
      });
      for (const [how, { headers, body }] of Object.entries(LEFT_OUT)) {
        const res = await fetch(`${ctx.api.base}${path}`, {
          method: route.method,
          headers: { authorization: `Bearer ${ctx.api.config.adminApiKey}`, ...headers },
          body,
        });
        expect(res.status, `${id} with ${how}: ${await res.clone().text()}`).toBe(route.status);
      }
    }
  });

  it('let a client generated with openapi-typescript call every operation through openapi-fetch without a dummy body', async () => {
    const served = await document();
    const calls = callsOfEveryOperation(served);
    expect(Object.keys(calls.lineOf).sort()).toEqual(Object.keys(routes).sort());
    expect(await typeCheckCalls(served, calls, scratch())).toEqual([]);

    // The same calls against a document that requires pause's body: only the pause call is refused.
    const pauseRequired = structuredClone(served);
    pauseRequired.paths[routes.pauseTask.path]!.post!.requestBody!.required = true;
    const errors = await typeCheckCalls(pauseRequired, calls, scratch());
    expect(errors.length).toBeGreaterThan(0);
    expect(errors.filter((line) => !line.startsWith(`calls.ts(${calls.lineOf.pauseTask},`))).toEqual([]);
  });
});
