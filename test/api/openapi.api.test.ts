import { describe, expect, it } from 'vitest';
import { useApiSandbox } from '../support/api-sandbox.js';

describe('OpenAPI document', () => {
  const ctx = useApiSandbox();

  it('documents every /v1 route with a summary, and every request body with examples', async () => {
    const doc = (await ctx.api.call('GET', '/docs/openapi.json')).body;
    const expected = [
      'get /v1/tasks', 'post /v1/tasks', 'put /v1/tasks/{name}', 'patch /v1/tasks/{name}', 'get /v1/tasks/{name}', 'delete /v1/tasks/{name}',
      'post /v1/tasks/{name}/pause', 'post /v1/tasks/{name}/resume', 'post /v1/tasks/{name}/trigger', 'post /v1/tasks/{name}/backfill',
      'get /v1/tasks/{name}/executions', 'get /v1/executions', 'get /v1/executions/{id}', 'post /v1/executions/{id}/retry',
      'post /v1/executions/{id}/cancel', 'post /v1/schedules/preview', 'get /v1/handlers', 'post /v1/api-keys', 'get /v1/api-keys',
      'delete /v1/api-keys/{id}', 'get /v1/audit',
    ];
    const documented = Object.entries(doc.paths as Record<string, Record<string, { summary?: string; requestBody?: { content: Record<string, { schema: { $ref?: string } }> } }>>)
      .flatMap(([path, ops]) => Object.entries(ops).map(([method, op]) => ({ key: `${method} ${path}`, op })));
    expect(documented.map((d) => d.key).sort()).toEqual(expected.sort());
    for (const { key, op } of documented) {
      expect(op.summary, key).toBeTruthy();
      const ref = op.requestBody?.content['application/json']?.schema.$ref;
      if (!ref) continue;
      const schema = doc.components.schemas[ref.split('/').pop()!];
      const examples = Object.values(schema.properties as Record<string, { example?: unknown; $ref?: string; allOf?: unknown }>).filter((p) => p.example !== undefined || p.$ref || p.allOf);
      expect(examples.length, `${key} has examples`).toBeGreaterThan(0);
    }
  });
});
