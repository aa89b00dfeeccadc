import { statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { useApiSandbox } from '../support/api-sandbox.js';
// @ts-expect-error plain JS script shared with people who run it by hand
import { takeScreenshots } from './screenshots.mjs';

const OUT = fileURLToPath(new URL('../artifacts/screenshots', import.meta.url));

describe('a browser signs in to Bull Board and the OpenAPI UI', () => {
  const ctx = useApiSandbox();

  it('sees the queue of each handler in use and the routes', async () => {
    // A queue per handler: the board lists those of the handlers tasks name (or live workers offer).
    for (const [name, handler] of [
      ['board-hook', 'http'],
      ['board-noop', 'noop'],
    ]) {
      expect(
        (
          await ctx.api.call('POST', '/v1/tasks', {
            name,
            handler,
            payload: handler === 'http' ? { url: 'https://example.com/hook' } : {},
            schedule: { cron: '0 9 * * *' },
          })
        ).status,
      ).toBe(201);
    }
    const seen = (await takeScreenshots(ctx.api.base, ctx.api.config.adminApiKey, OUT)) as {
      loginUrl: string;
      board: string;
      docs: string;
    };
    expect(seen.loginUrl).toContain('/admin/login');
    expect(seen.board).toContain('executions.http');
    expect(seen.board).toContain('executions.noop');
    expect(seen.docs).toContain('/v1/tasks/{name}/backfill');
    expect(statSync(`${OUT}/bull-board.png`).size).toBeGreaterThan(10_000);
    expect(statSync(`${OUT}/openapi.png`).size).toBeGreaterThan(10_000);
  });
});
