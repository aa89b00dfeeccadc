import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Cluster } from '../test/support/cluster.js';
import type { OwnPostgres } from '../test/support/postgres-server.js';
import { sleep } from '../test/support/processes.js';
import type { OwnRedis } from '../test/support/redis-server.js';
import type { FaultEvent } from './check.js';
import type { Random } from './random.js';
import { type ChaosTask, SWITCHABLE } from './workload.js';

/** One kind of trouble: what it does to the running system. */
interface Fault {
  kind: string;
  weight: number;
  inject(): Promise<void>;
}

/**
 * A user's application (chaos/app-worker.ts) as a process: the only worker offering `app-hook`.
 * Restarted as a deploy restarts it — SIGTERM, a few seconds away, started again.
 */
export class AppWorker {
  private child: ChildProcess | null = null;
  constructor(private readonly env: Record<string, string>) {}

  start(): void {
    const script = fileURLToPath(new URL('./app-worker.js', import.meta.url));
    this.child = spawn(process.execPath, [script], {
      env: { PATH: process.env.PATH ?? '', ...this.env },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
  }

  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill(signal);
    await exited;
  }
}

/**
 * The faults of a chaos run, each as a user or an operator would meet it: processes killed or
 * frozen, Redis emptied or restarted, Postgres sessions cut or the server restarted, the
 * application offering a handler of its own restarted, and ordinary operations (edits, pauses,
 * triggers) at any moment. Killed processes are replaced, so the fleet stays two schedulers and
 * two workers.
 */
export class FaultInjector {
  readonly log: FaultEvent[] = [];
  private readonly faults: Fault[];

  constructor(
    private readonly cluster: Cluster,
    private readonly redis: OwnRedis,
    private readonly random: Random,
    private readonly tasks: ChaosTask[],
    private readonly url: (query: { delay?: number; failFirst?: number }) => string,
    private readonly postgres: OwnPostgres,
    private readonly app: AppWorker,
  ) {
    this.faults = [
      { kind: 'leader kill -9', weight: 3, inject: () => this.killLeader() },
      { kind: 'leader SIGSTOP', weight: 2, inject: () => this.freezeLeader() },
      { kind: 'worker kill -9', weight: 2, inject: () => this.killWorker() },
      { kind: 'FLUSHALL', weight: 2, inject: async () => void (await this.redis.command('FLUSHALL')) },
      { kind: 'Postgres sessions killed', weight: 2, inject: () => this.killSessions() },
      { kind: 'task edited', weight: 3, inject: () => this.edit() },
      { kind: 'jitter edited', weight: 2, inject: () => this.editJitter() },
      { kind: 'pause/resume', weight: 2, inject: () => this.pauseResume() },
      { kind: 'trigger', weight: 2, inject: () => this.trigger() },
      { kind: 'Postgres restart', weight: 1, inject: () => this.restartPostgres() },
      { kind: 'Redis restart', weight: 1, inject: () => this.redis.restart(this.random.int(500, 3_000)) },
      { kind: 'app worker restart', weight: 2, inject: () => this.restartApp() },
    ];
  }

  /** Injects faults, one after another a few seconds apart, until `until`. */
  async run(until: number): Promise<void> {
    while (Date.now() < until) {
      await sleep(this.random.int(1_500, 4_000));
      if (Date.now() >= until) break;
      const fault = this.pick();
      this.log.push({ kind: fault.kind, at: Date.now() });
      await fault
        .inject()
        .catch((error: unknown) => console.error(`${fault.kind} failed: ${(error as Error).message}`));
    }
  }

  private pick(): Fault {
    let r = this.random.next() * this.faults.reduce((sum, f) => sum + f.weight, 0);
    for (const fault of this.faults) if ((r -= fault.weight) < 0) return fault;
    return this.faults[0]!;
  }

  private async killLeader(): Promise<void> {
    const leader = await this.cluster.leader();
    if (!leader) return;
    leader.signal('SIGKILL');
    this.cluster.schedulers.splice(this.cluster.schedulers.indexOf(leader), 1);
    void this.cluster.add('scheduler').catch(() => undefined);
  }

  private async freezeLeader(): Promise<void> {
    const leader = await this.cluster.leader();
    if (!leader) return;
    leader.signal('SIGSTOP');
    await sleep(this.random.int(1_500, 4_000));
    leader.signal('SIGCONT');
  }

  private async killWorker(): Promise<void> {
    const worker = this.random.pick(this.cluster.workers.filter((w) => w.alive));
    if (!worker) return;
    worker.signal('SIGKILL');
    this.cluster.workers.splice(this.cluster.workers.indexOf(worker), 1);
    void this.cluster.add('worker').catch(() => undefined);
  }

  /** Postgres stops (fast: sessions ended), stays away 2–8 s, and starts again: a restart or a failover. */
  private async restartPostgres(): Promise<void> {
    this.postgres.stop();
    await sleep(this.random.int(2_000, 8_000));
    this.postgres.start();
    await this.cluster.reconnect();
  }

  /** The application is redeployed: a clean stop, 1–5 s with no worker offering its handler, a start. */
  private async restartApp(): Promise<void> {
    await this.app.stop('SIGTERM');
    await sleep(this.random.int(1_000, 5_000));
    this.app.start();
  }

  private async killSessions(): Promise<void> {
    await this.cluster.db.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND application_name LIKE 'punctual %'`,
    );
  }

  /**
   * A task's jitter changes: the `fire_at` of slots already planned, perhaps already pushed to the
   * queue for their old instant, moves — later or earlier. None may start before its new `fire_at`.
   */
  private async editJitter(): Promise<void> {
    const task = this.random.pick(this.tasks.filter((t) => !t.name.startsWith('once-')));
    await this.cluster.call('PATCH', `/v1/tasks/${task.name}`, {
      schedule: { jitter: this.random.pick(['0s', '200ms', '500ms', '900ms']) },
    });
  }

  /** What runs (the webhook's delay) or when (a switchable task's schedule) changes. */
  private async edit(): Promise<void> {
    // The retry tasks keep their failing first attempt: their payload is not edited.
    const task = this.random.pick(
      this.tasks.filter((t) => !t.name.startsWith('once-') && !t.name.startsWith('retry-')),
    );
    const change = task.name.startsWith('switch-')
      ? { schedule: { cron: this.random.pick(SWITCHABLE) } }
      : { payload: { url: this.url({ delay: this.random.pick([0, 5, 20]) }) } };
    await this.cluster.call('PATCH', `/v1/tasks/${task.name}`, change);
  }

  private async pauseResume(): Promise<void> {
    const task = this.random.pick(this.tasks);
    await this.cluster.call('POST', `/v1/tasks/${task.name}/pause`, {});
    await sleep(this.random.int(500, 3_000));
    const catchUp = this.random.pick(['skip', 'latest', 'all']);
    // A task left paused would stop having slots: the resume is asked until it is answered.
    for (let tries = 0; tries < 20; tries += 1) {
      const res = await this.cluster.call('POST', `/v1/tasks/${task.name}/resume`, { catchUp }).catch(() => null);
      if (res?.status === 200) return;
      await sleep(500);
    }
  }

  private async trigger(): Promise<void> {
    await this.cluster.call('POST', `/v1/tasks/${this.random.pick(this.tasks).name}/trigger`, {});
  }
}
