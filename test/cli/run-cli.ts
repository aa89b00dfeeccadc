import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** The built CLI, as `npx punctual` runs it (package.json `bin`). */
export const CLI = `${ROOT}dist/apps/cli/src/main.js`;

/**
 * Makes sure the CLI is built: `npm test` builds first; a lone run of these tests builds it here
 * (the TypeScript compiler only: the Prisma client is not the CLI's concern).
 */
export function ensureCliBuilt(): void {
  if (existsSync(CLI)) return;
  for (const args of [['tsc', '-p', 'tsconfig.build.json'], ['tsc-alias', '-p', 'tsconfig.build.json']]) {
    const built = spawnSync('npx', args, { cwd: ROOT, encoding: 'utf8', timeout: 300_000 });
    if (built.status !== 0) throw new Error(`building the CLI failed: ${built.stdout}${built.stderr}`);
  }
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs the CLI as a child process with only `env` (and PATH) in its environment. Asynchronous on
 * purpose: the API under test serves from this process's event loop.
 */
export function runCli(args: string[], env: Record<string, string | undefined>): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
