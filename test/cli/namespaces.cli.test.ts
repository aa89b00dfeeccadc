import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PunctualClient } from '@punctual/client';
import { beforeAll, describe, expect, it } from 'vitest';
import { useApiSandbox } from '../support/api-sandbox.js';
import { ensureCliBuilt, runCli } from './run-cli.js';

/** A file of one manager: `names` as tasks, in the file's `namespace` when it names one. */
const taskFile = (names: string[], namespace?: string) =>
  [
    ...(namespace ? [`namespace: ${namespace}`] : []),
    'managedBy: ns-cli',
    'tasks:',
    ...names.map((n) => `  - { name: ${n}, handler: noop, schedule: { cron: "0 9 * * *" } }`),
  ].join('\n');

describe('the CLI in namespaces: --namespace, PUNCTUAL_NAMESPACE and a file namespace', () => {
  const ctx = useApiSandbox();
  const dir = mkdtempSync(join(tmpdir(), 'punctual-ns-cli-'));
  const env = (extra: Record<string, string> = {}) => ({
    PUNCTUAL_URL: ctx.api.base,
    PUNCTUAL_API_KEY: ctx.api.config.adminApiKey,
    ...extra,
  });
  const file = (name: string, text: string) => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  };
  const client = (namespace?: string) =>
    new PunctualClient({ baseUrl: ctx.api.base, apiKey: ctx.api.config.adminApiKey, namespace });
  const names = async (namespace?: string) => (await client(namespace).tasks.list().all()).map((t) => t.name);

  beforeAll(async () => {
    await ensureCliBuilt();
    for (const ns of ['cli-a', 'cli-b']) await client().namespaces.put(ns, { description: ns });
  }, 300_000);

  it('applies a file into the namespace it names, and prunes only there', async () => {
    const a = await runCli(['apply', '-f', file('a.yaml', taskFile(['one', 'two'], 'cli-a'))], env());
    expect(a.code, a.stderr).toBe(0);
    const b = await runCli(['apply', '-f', file('b.yaml', taskFile(['three']))], env({ PUNCTUAL_NAMESPACE: 'cli-b' }));
    expect(b.code, b.stderr).toBe(0);
    expect(await names('cli-a')).toEqual(['one', 'two']);
    expect(await names('cli-b')).toEqual(['three']);
    expect(await names()).toEqual([]);
    // The same manager, pruning in cli-a: cli-b's task stays.
    const pruned = await runCli(['apply', '--prune', '-f', file('a2.yaml', taskFile(['one'], 'cli-a'))], env());
    expect(pruned.code).toBe(0);
    expect(pruned.stdout).toContain('- delete two');
    expect(await names('cli-a')).toEqual(['one']);
    expect(await names('cli-b')).toEqual(['three']);
  });

  it('lists with --namespace (over PUNCTUAL_NAMESPACE), and refuses a --namespace the file contradicts', async () => {
    const listed = await runCli(
      ['--namespace', 'cli-b', '--output', 'json', 'tasks', 'ls'],
      env({ PUNCTUAL_NAMESPACE: 'cli-a' }),
    );
    expect(listed.code).toBe(0);
    expect(
      JSON.parse(listed.stdout).items.map((t: { name: string; namespace: string }) => `${t.namespace}/${t.name}`),
    ).toEqual(['cli-b/three']);
    const contradicted = await runCli(
      ['--namespace', 'cli-b', 'apply', '-f', file('c.yaml', taskFile(['four'], 'cli-a'))],
      env(),
    );
    expect(contradicted.code).toBe(2);
    expect(contradicted.stderr).toContain('--namespace cli-b names another namespace than the file');
    expect(await names('cli-a')).toEqual(['one']);
    const bad = await runCli(['--namespace', 'Not_A_Namespace', 'tasks', 'ls'], env());
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--namespace must match');
    const unknown = await runCli(['--namespace', 'cli-zzz', 'tasks', 'ls'], env());
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('no namespace named "cli-zzz"');
  });
});
