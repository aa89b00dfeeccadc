import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { runCli } from './cli.js';
import { reportError } from './report-error.js';

/** Runs the CLI against `url`, its output collected. */
async function cliAt(url: string, ...argv: string[]) {
  const out = { stdout: '', stderr: '' };
  const code = await runCli(argv, {
    stdout: (t) => (out.stdout += t),
    stderr: (t) => (out.stderr += t),
    env: { PUNCTUAL_URL: url },
  });
  return { code, ...out };
}

/** A local port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('reportError', () => {
  const context = { baseUrl: 'http://127.0.0.1:3000', hasKey: true, secrets: [] };

  it('says an API that refuses the connection is unreachable, naming the network code', async () => {
    const url = `http://127.0.0.1:${await closedPort()}`;
    const text = await cliAt(url, 'tasks', 'ls');
    expect([text.code, text.stderr]).toEqual([
      1,
      `error: cannot reach the Punctual API at ${url} (ECONNREFUSED): is it running, and is PUNCTUAL_URL right?\n`,
    ]);
    const json = await cliAt(url, 'tasks', 'ls', '-o', 'json');
    expect(JSON.parse(json.stdout).error.code).toBe('unreachable');
  });

  it('says a host that does not resolve is unreachable, naming the resolver code', async () => {
    const result = await cliAt('http://no-such-host.invalid', 'tasks', 'ls');
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /^error: cannot reach the Punctual API at http:\/\/no-such-host\.invalid \((ENOTFOUND|EAI_AGAIN)\): /,
    );
  });

  it('reads a request that ran out of time by its DOMException code', async () => {
    const signal = AbortSignal.timeout(1);
    await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
    expect(reportError(signal.reason, context)).toMatchObject({
      exitCode: 1,
      envelope: { error: { code: 'timeout' } },
      lines: ['error: the Punctual API at http://127.0.0.1:3000 did not answer in time'],
    });
  });

  it('does not take an error for a network failure because of its words', () => {
    expect(reportError(new TypeError('fetch failed'), context)).toMatchObject({
      envelope: { error: { code: 'error', message: 'fetch failed' } },
    });
    expect(reportError(new Error('The operation was aborted due to timeout'), context).envelope.error.code).toBe(
      'error',
    );
  });
});
