import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** The built CLI, as `npx punctual` runs it (package.json `bin`). */
export const CLI = `${ROOT}dist/apps/cli/src/main.js`;

/**
 * Makes sure the CLI is built: `npm test` builds first; a lone run of these tests builds here, once
 * (a lock directory keeps two test files from building at the same time).
 */
export async function ensureCliBuilt(): Promise<void> {
  const lock = `${ROOT}dist/.cli-build.lock`;
  // Another file is building: its output is not whole until it is done (tsc-alias runs after tsc).
  for (let waited = 0; existsSync(lock) && waited < 300_000; waited += 500)
    await new Promise((r) => setTimeout(r, 500));
  if (existsSync(CLI)) return;
  mkdirSync(`${ROOT}dist`, { recursive: true });
  try {
    mkdirSync(lock);
  } catch {
    return ensureCliBuilt();
  }
  try {
    const built = spawnSync('npm', ['run', 'build'], { cwd: ROOT, encoding: 'utf8', timeout: 300_000 });
    if (built.status !== 0) throw new Error(`npm run build failed: ${built.stdout}${built.stderr}`);
  } finally {
    rmSync(lock, { recursive: true, force: true });
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
    const child = spawn(process.execPath, [CLI, ...args], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
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
