import { type ChildProcess, spawn } from 'node:child_process';
import { Redis } from 'ioredis';
import { freePort, sleep } from './processes.js';

/** A throwaway redis-server of a test's own, so it may FLUSHALL or restart it freely. */
export class OwnRedis {
  private constructor(
    readonly port: number,
    private child: ChildProcess,
  ) {}

  static async start(port?: number): Promise<OwnRedis> {
    const p = port ?? (await freePort());
    const child = spawn(
      'redis-server',
      ['--port', String(p), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      { stdio: 'ignore' },
    );
    const server = new OwnRedis(p, child);
    await server.ready();
    return server;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  private async ready(): Promise<void> {
    for (let i = 0; i < 100; i += 1) {
      const probe = new Redis(this.url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      probe.on('error', () => undefined);
      try {
        await probe.connect();
        await probe.ping();
        return;
      } catch {
        await sleep(50);
      } finally {
        probe.disconnect();
      }
    }
    throw new Error(`redis-server on ${this.port} did not start`);
  }

  async command(...args: [string, ...string[]]): Promise<unknown> {
    const client = new Redis(this.url);
    try {
      return await client.call(...args);
    } finally {
      client.disconnect();
    }
  }

  /** Restarts the server on its port, `downMs` later, with nothing kept (as a restart without persistence does). */
  async restart(downMs: number): Promise<void> {
    await this.stop();
    await sleep(downMs);
    this.child = spawn(
      'redis-server',
      ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      { stdio: 'ignore' },
    );
    await this.ready();
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.kill('SIGKILL');
    await exited;
  }
}
