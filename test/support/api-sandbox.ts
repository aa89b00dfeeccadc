import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { startApi } from './api.js';
import { createSandbox, type Sandbox } from './isolation.js';
import { openRepositories } from './repositories.js';

export interface ApiSandbox {
  sandbox: Sandbox;
  api: Awaited<ReturnType<typeof startApi>>;
  db: Awaited<ReturnType<typeof openRepositories>>;
}

/** Registers hooks that give the file's tests an in-process API over a database and prefix of their own. */
export function useApiSandbox(overrides: Record<string, string> = {}): ApiSandbox {
  const ctx = {} as ApiSandbox;
  beforeAll(async () => {
    ctx.sandbox = await createSandbox();
    ctx.api = await startApi(ctx.sandbox, overrides);
    ctx.db = await openRepositories(ctx.sandbox.config());
  });
  afterAll(async () => {
    await ctx.api?.close();
    await ctx.db?.close();
    await ctx.sandbox?.dispose();
  });
  return ctx;
}

export interface RepositorySandbox {
  sandbox: Sandbox;
  db: Awaited<ReturnType<typeof openRepositories>>;
  /** A plain session of the test's own, for rows inserted and read by hand. */
  client: pg.Client;
}

/** Registers hooks that give the file's tests the repositories over a database of their own (no API). */
export function useRepositorySandbox(overrides: Record<string, string> = {}): RepositorySandbox {
  const ctx = {} as RepositorySandbox;
  beforeAll(async () => {
    ctx.sandbox = await createSandbox();
    ctx.db = await openRepositories(ctx.sandbox.config(overrides));
    ctx.client = new pg.Client({ connectionString: ctx.sandbox.databaseUrl });
    await ctx.client.connect();
  });
  afterAll(async () => {
    await ctx.client?.end();
    await ctx.db?.close();
    await ctx.sandbox?.dispose();
  });
  return ctx;
}
