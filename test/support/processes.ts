import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The project root: the same from the sources (tests) and from `dist/` (benchmarks). */
function projectRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) dir = dirname(dir);
  return `${dir}/`;
}

const ROOT = projectRoot();
const LOG_DIR = `${ROOT}test/artifacts`;

export type Role = 'api' | 'scheduler' | 'worker';

/** A Punctual app running as a real OS process (from `dist/`, built by `npm test`). */
export class AppProcess {
  private exited: Promise<number | null>;
  output = '';

  private constructor(
    readonly role: Role,
    readonly child: ChildProcess,
    readonly port: number,
    readonly label: string,
  ) {
    this.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  }

  static start(role: Role, env: Record<string, string>, port: number, label: string = role): AppProcess {
    const portEnv = role === 'api' ? { PORT: String(port) } : { HEALTH_PORT: String(port) };
    // `npm run bench -- --profile DIR` writes a CPU profile of every app process into DIR.
    const profile = process.env.PUNCTUAL_CPU_PROFILE_DIR
      ? ['--cpu-prof', `--cpu-prof-dir=${process.env.PUNCTUAL_CPU_PROFILE_DIR}`]
      : [];
    const child = spawn(process.execPath, [...profile, `${ROOT}dist/apps/${role}/src/main.js`], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', INSTANCE_ID: `${label}-${port}`, ...env, ...portEnv },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    mkdirSync(LOG_DIR, { recursive: true });
    const log = createWriteStream(`${LOG_DIR}/${env.REDIS_PREFIX ?? 'app'}-${label}-${port}.log`);
    const app = new AppProcess(role, child, port, label);
    for (const stream of [child.stdout!, child.stderr!]) {
      stream.on('data', (chunk: Buffer) => {
        log.write(chunk);
        if (app.output.length < 200_000) app.output += chunk.toString();
      });
    }
    return app;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Its `INSTANCE_ID` (its Postgres sessions are named `punctual <instanceId>`). */
  get instanceId(): string {
    return `${this.label}-${this.port}`;
  }

  /** Resolves once `/health/ready` answers 200; fails if the process exits first. */
  async ready(timeoutMs = 30_000): Promise<this> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (this.child.exitCode !== null)
        throw new Error(`${this.role} exited with ${this.child.exitCode}:\n${this.output}`);
      try {
        const res = await fetch(`${this.url}/health/ready`);
        if (res.ok) return this;
      } catch {
        // not listening yet
      }
      await sleep(100);
    }
    throw new Error(`${this.role} not ready after ${timeoutMs} ms:\n${this.output}`);
  }

  signal(signal: NodeJS.Signals): void {
    if (this.alive) this.child.kill(signal);
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Sends `signal` and waits for the exit code (SIGKILL after `timeoutMs`). */
  async stop(signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 15_000): Promise<number | null> {
    if (!this.alive) return this.child.exitCode;
    this.signal('SIGCONT');
    this.signal(signal);
    const timer = setTimeout(() => this.signal('SIGKILL'), timeoutMs);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `probe` every `everyMs` until it answers something truthy; throws naming `what` after `timeoutMs`. */
export async function waitFor<T>(
  probe: () => Promise<T | null | undefined | false>,
  timeoutMs: number,
  what: string,
  everyMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}

/** A port nobody listens on right now, chosen by the kernel. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
