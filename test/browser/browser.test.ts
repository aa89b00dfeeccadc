import { statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { useApiSandbox } from '../support/api-sandbox.js';
// @ts-expect-error plain JS script shared with people who run it by hand
import { takeScreenshots } from './screenshots.mjs';

const OUT = fileURLToPath(new URL('../artifacts/screenshots', import.meta.url));

describe('a browser signs in to Bull Board and the OpenAPI UI', () => {
  const ctx = useApiSandbox();

  it('sees the executions queue and the routes', async () => {
    const seen = (await takeScreenshots(ctx.api.base, ctx.api.config.adminApiKey, OUT)) as { loginUrl: string; board: string; docs: string };
    expect(seen.loginUrl).toContain('/admin/login');
    expect(seen.board).toContain('executions');
    expect(seen.docs).toContain('/v1/tasks/{name}/backfill');
    expect(statSync(`${OUT}/bull-board.png`).size).toBeGreaterThan(10_000);
    expect(statSync(`${OUT}/openapi.png`).size).toBeGreaterThan(10_000);
  });
});
