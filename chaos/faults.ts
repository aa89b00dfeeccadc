import type { Cluster } from '../test/support/cluster.js';
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
 * The faults of a chaos run, each as a user or an operator would meet it: processes killed or
 * frozen, Redis emptied, Postgres sessions cut, and ordinary operations (edits, pauses, triggers)
 * at any moment. Killed processes are replaced, so the fleet stays two schedulers and two workers.
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
    ];
  }

  /** Injects faults, one after another a few seconds apart, until `until`. */
  async run(until: number): Promise<void> {
    while (Date.now() < until) {
      await sleep(this.random.int(1_500, 4_000));
      if (Date.now() >= until) break;
      const fault = this.pick();
      this.log.push({ kind: fault.kind, at: Date.now() });
      await fault.inject().catch((error: unknown) => console.error(`${fault.kind} failed: ${(error as Error).message}`));
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
    await this.cluster.call('PATCH', `/v1/tasks/${task.name}`, { schedule: { jitter: this.random.pick(['0s', '200ms', '500ms', '900ms']) } });
  }

  /** What runs (the webhook's delay) or when (a switchable task's schedule) changes. */
  private async edit(): Promise<void> {
    // The retry tasks keep their failing first attempt: their payload is not edited.
    const task = this.random.pick(this.tasks.filter((t) => !t.name.startsWith('once-') && !t.name.startsWith('retry-')));
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
