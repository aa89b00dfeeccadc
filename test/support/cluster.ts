import pg from 'pg';
import { EXECUTION_HISTORY } from '../../libs/db/src/index.js';
import type { Sandbox } from './sandbox.js';
import { Invocations } from './invocations.js';
import { AppProcess, freePort, type Role, sleep, waitFor } from './processes.js';
import { wrongOverlapSkip } from './overlap.js';
import { insertTasks } from './tasks.js';

export const TERMINAL = ['succeeded', 'dead', 'skipped', 'missed', 'cancelled'];

export interface SlotReport {
  /** Slots expected over the window, for every task. */
  expected: number;
  /** Slots with no row and not counted as missed: lost. */
  lost: string[];
  /** Rows not yet in a terminal state. */
  unfinished: string[];
  /** Executions that succeeded more than once (more than one success event). */
  doubled: string[];
  /** Slots whose handler was invoked successfully more than once (counted by the webhook). */
  ranTwice: string[];
  /** Executions recorded `succeeded` whose handler the webhook never saw succeed (http tasks only). */
  succeededUnseen: string[];
  /** Successful handler invocations the webhook counted for these slots. */
  invoked: number;
  /** Count by `status` or `status:skip_reason`. */
  byStatus: Record<string, number>;
  /**
   * Slots skipped for overlap that no run of their task overlapped (see {@link wrongOverlapSkip}).
   * A skip that a run in progress at the slot's own time explains is the default policy at work:
   * on a loaded machine a 50 ms webhook's run can outlast a second.
   */
  wrongOverlapSkips: string[];
  maxAttempt: number;
}

/** Real scheduler and worker processes over one sandbox, with helpers to inspect the outcome. */
export class Cluster {
  readonly schedulers: AppProcess[] = [];
  readonly workers: AppProcess[] = [];
  api: AppProcess | null = null;
  private constructor(
    readonly sandbox: Sandbox,
    /** The test's own session (see {@link reconnect} after the server restarted). */
    public db: pg.Client,
    private readonly env: Record<string, string>,
    /** The webhook that `http` tasks of this cluster call: handler invocations, counted outside Punctual. */
    readonly invocations: Invocations,
  ) {}

  /** `sandbox` defaults to a clone of the test run's template (imported late: it needs vitest). */
  static async start(options: {
    schedulers: number;
    workers: number;
    api?: boolean;
    env?: Record<string, string>;
    sandbox?: Sandbox;
  }): Promise<Cluster> {
    const sandbox = options.sandbox ?? (await (await import('./isolation.js')).createSandbox());
    const db = new pg.Client({ connectionString: sandbox.databaseUrl });
    // A fault test may stop the server under it: the session's death is seen at its next query.
    db.on('error', () => undefined);
    await db.connect();
    const env = sandbox.env({
      LEADER_TTL_MS: '1000',
      LOG_LEVEL: 'info',
      HTTP_ALLOW_HOSTS: '127.0.0.1',
      ...options.env,
    });
    const cluster = new Cluster(sandbox, db, env, await Invocations.start());
    const started = await Promise.allSettled([
      ...Array.from({ length: options.schedulers }, () => cluster.add('scheduler')),
      ...Array.from({ length: options.workers }, () => cluster.add('worker')),
      options.api ? cluster.startApi() : Promise.resolve(null),
    ]);
    const failed = started.find((s) => s.status === 'rejected');
    if (failed) {
      // The caller never gets the cluster to stop: stop what did start, and drop the sandbox.
      await cluster.stop();
      throw failed.reason;
    }
    return cluster;
  }

  private async startApi(): Promise<AppProcess> {
    this.api = AppProcess.start('api', this.env, await freePort());
    return this.api.ready().catch((error: unknown) => {
      this.api?.signal('SIGKILL');
      throw error;
    });
  }

  /** The admin key the API process was started with. */
  get adminKey(): string {
    return this.env.ADMIN_API_KEY!;
  }

  /** Calls the API process with the admin key; JSON in, JSON out. */
  async call(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
    if (!this.api) throw new Error('the cluster has no api process');
    const res = await fetch(`${this.api.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${this.env.ADMIN_API_KEY}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  }

  /** Rows of one task's executions, oldest slot first. */
  async executionsOf(taskName: string) {
    const { rows } = await this.db.query(
      `SELECT id, scheduled_for, status, skip_reason, attempt, worker_id, started_at, finished_at, error, trigger
       FROM task_execution WHERE task_name = $1 ORDER BY scheduled_for`,
      [taskName],
    );
    return rows as {
      id: string;
      scheduled_for: Date;
      status: string;
      skip_reason: string | null;
      attempt: number;
      worker_id: string | null;
      started_at: Date | null;
      finished_at: Date | null;
      error: string | null;
      trigger: string;
    }[];
  }

  waitFor<T>(probe: () => Promise<T | null | undefined | false>, timeoutMs = 20_000, what = 'condition'): Promise<T> {
    return waitFor(probe, timeoutMs, what);
  }

  /** Starts one more scheduler or worker; `env` adds to (or overrides) the cluster's environment for it alone. */
  async add(role: Exclude<Role, 'api'>, env: Record<string, string> = {}): Promise<AppProcess> {
    const list = role === 'scheduler' ? this.schedulers : this.workers;
    const app = AppProcess.start(role, { ...this.env, ...env }, await freePort(), `${role}${list.length}`);
    list.push(app);
    return app.ready().catch((error: unknown) => {
      app.signal('SIGKILL');
      throw error;
    });
  }

  /** A new session for the test's own reads: the server restarted, and the old one died with it. */
  async reconnect(): Promise<void> {
    await this.db.end().catch(() => undefined);
    const db = new pg.Client({ connectionString: this.sandbox.databaseUrl });
    db.on('error', () => undefined);
    await db.connect();
    this.db = db;
  }

  /** The scheduler process that holds the newest epoch. */
  async leader(): Promise<AppProcess | undefined> {
    const { rows } = await this.db.query('SELECT leader_id FROM scheduler_state WHERE id = 1');
    return this.schedulers.find(
      (s) => s.child.exitCode === null && s.child.signalCode === null && s.instanceId === rows[0]?.leader_id,
    );
  }

  async waitForLeader(timeoutMs = 10_000): Promise<AppProcess> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const leader = await this.leader();
      if (leader) return leader;
      await sleep(50);
    }
    throw new Error('no leader elected');
  }

  /**
   * Tasks running every second with the default policies, their cursor on the next whole second.
   * Each calls {@link invocations} through the `http` handler (`handler: 'noop'` for none);
   * `columns` (SQL names) are set on all, `name` only on a single task.
   */
  async createEverySecondTasks(
    count: number,
    columns: Record<string, unknown> = {},
    options: { handler?: 'http' | 'noop'; prefix?: string; webhook?: Parameters<Invocations['url']>[0] } = {},
  ): Promise<{ ids: string[]; firstSlot: number }> {
    const firstSlot = Math.ceil((Date.now() + 500) / 1000) * 1000;
    const handler = options.handler ?? 'http';
    const payload = handler === 'http' ? { url: this.invocations.url(options.webhook) } : {};
    const ids = await insertTasks(this.db, count, {
      prefix: options.prefix ?? 'fault',
      nextRunAt: new Date(firstSlot),
      handler,
      payload,
    });
    const { name, ...rest } = columns;
    const set = Object.entries(count === 1 && name ? columns : rest);
    if (set.length > 0) {
      // In an UPDATE each value takes its column's type (an enum from a string, for one).
      await this.db.query(
        `UPDATE task SET ${set.map(([column], i) => `${column} = $${i + 2}`).join(', ')} WHERE id = ANY($1::uuid[])`,
        [ids, ...set.map(([, value]) => value)],
      );
    }
    return { ids, firstSlot };
  }

  /**
   * Once `count` runs of task `name` have succeeded: pauses it (through the API), waits until every
   * slot up to the last of those has ended, and returns the task's executions up to that slot —
   * every one of them, to be judged whole (none lost, none doubled).
   */
  async runsUntilPaused(name: string, count: number, timeoutMs: number) {
    const succeeded = await this.waitFor(
      async () => {
        const done = (await this.executionsOf(name)).filter((e) => e.status === 'succeeded');
        return done.length >= count && done;
      },
      timeoutMs,
      `${count} runs of ${name} to succeed`,
    );
    const paused = await this.call('POST', `/v1/tasks/${encodeURIComponent(name)}/pause`);
    if (paused.status !== 200) throw new Error(`pausing ${name} answered ${paused.status}`);
    const until = succeeded.at(-1)!.scheduled_for.getTime();
    await this.settle(until);
    return (await this.executionsOf(name)).filter((e) => e.scheduled_for.getTime() <= until);
  }

  /** Waits until every execution scheduled up to `lastSlot` is terminal (or the timeout passes). */
  async settle(lastSlot: number, timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const { rows } = await this.db.query(
        `SELECT count(*)::int AS n FROM task_execution WHERE scheduled_for <= $1 AND status <> ALL($2::execution_status[])`,
        [new Date(lastSlot), TERMINAL],
      );
      if (rows[0].n === 0) return;
      await sleep(200);
    }
  }

  /**
   * Each skipped execution of these tasks beside its task's neighbouring rows and their events: what
   * a failing fault test prints to show why a slot was judged as it was.
   */
  async explainSkips(taskIds: string[]): Promise<string> {
    const { rows: skipped } = await this.db.query(
      `SELECT task_id, scheduled_for, skip_reason FROM task_execution WHERE task_id = ANY($1::uuid[]) AND status = 'skipped' ORDER BY scheduled_for`,
      [taskIds],
    );
    const out: string[] = [];
    for (const s of skipped) {
      const { rows } = await this.db.query(
        `SELECT e.scheduled_for, e.fire_at, e.trigger, e.status, e.attempt, e.queued_at, e.started_at, e.finished_at,
                (SELECT json_agg(json_build_object('from', ev.from_status, 'to', ev.to_status, 'at', ev.at, 'detail', ev.detail))
                 FROM (${EXECUTION_HISTORY}) ev) AS events
         FROM task_execution e WHERE e.task_id = $1 AND e.scheduled_for BETWEEN $2::timestamptz - interval '6 s' AND $2::timestamptz + interval '2 s'
         ORDER BY e.scheduled_for`,
        [s.task_id, s.scheduled_for],
      );
      out.push(
        `skipped(${s.skip_reason}) ${s.scheduled_for.toISOString()} of ${s.task_id}:\n${JSON.stringify(rows, null, 1)}`,
      );
    }
    return out.join('\n');
  }

  /**
   * Accounts for every one-second slot of every task in `[from, to]` (DESIGN §1, promises 1 and 2),
   * counting runs as the tasks' webhook saw them: a slot whose handler succeeded twice ran twice.
   */
  async report(taskIds: string[], from: number, to: number): Promise<SlotReport> {
    const { rows: read } = await this.db.query(
      `SELECT e.id, e.task_id, e.scheduled_for, e.status, e.skip_reason, e.attempt, e.fire_at, e.exclusive, e.finished_at, t.handler, t.overlap,
              h.successes, h.first_start
       FROM task_execution e LEFT JOIN task t ON t.id = e.task_id
       CROSS JOIN LATERAL (
         SELECT (count(*) FILTER (WHERE ev.to_status = 'succeeded'))::int AS successes, min(ev.at) FILTER (WHERE ev.to_status = 'running') AS first_start
         FROM (${EXECUTION_HISTORY}) ev
       ) h
       WHERE e.task_id = ANY($1::uuid[]) AND e.scheduled_for BETWEEN $2::timestamptz - interval '1 minute' AND $3`,
      [taskIds, new Date(from), new Date(to)],
    );
    const { rows: missed } = await this.db.query(
      `SELECT t.id, t.missed_count::int - (SELECT count(*) FROM task_execution e WHERE e.task_id = t.id AND e.status = 'missed')::int AS uncounted
       FROM task t WHERE t.id = ANY($1::uuid[])`,
      [taskIds],
    );
    // A run begun before the window may hold the task at its first slot: read, not counted.
    const rows = read.filter((r) => r.scheduled_for.getTime() >= from);
    const seen = new Set(rows.map((r) => `${r.task_id}@${r.scheduled_for.getTime()}`));
    const countedOnly = new Map(missed.map((m) => [m.id as string, m.uncounted as number]));
    const report: SlotReport = {
      expected: 0,
      lost: [],
      unfinished: [],
      doubled: [],
      ranTwice: [],
      succeededUnseen: [],
      invoked: 0,
      byStatus: {},
      wrongOverlapSkips: [],
      maxAttempt: 0,
    };
    const runs = this.invocations.succeededBy();
    for (const id of taskIds) {
      let absent = 0;
      for (let slot = from; slot <= to; slot += 1000) {
        report.expected += 1;
        if (!seen.has(`${id}@${slot}`)) absent += 1;
      }
      // Late slots beyond CATCHUP_MAX have no row but are counted in missed_count.
      const lost = absent - Math.min(absent, countedOnly.get(id) ?? 0);
      if (lost > 0) report.lost.push(`${id}: ${lost} slot(s)`);
    }
    for (const r of rows) {
      const key = r.skip_reason ? `${r.status}:${r.skip_reason}` : r.status;
      report.byStatus[key] = (report.byStatus[key] ?? 0) + 1;
      if (!TERMINAL.includes(r.status)) report.unfinished.push(`${r.id} ${r.status}`);
      if (r.successes > 1) report.doubled.push(r.id);
      report.maxAttempt = Math.max(report.maxAttempt, r.attempt);
      const ran = runs.get(r.id) ?? 0;
      report.invoked += ran;
      if (ran > 1) report.ranTwice.push(`${r.id} (${r.scheduled_for.toISOString()}): ${ran} runs`);
      if (r.handler === 'http' && r.status === 'succeeded' && ran === 0) report.succeededUnseen.push(r.id);
      if (r.skip_reason === 'overlap') {
        const why = wrongOverlapSkip(
          r,
          read.filter((o) => o.task_id === r.task_id),
          r.overlap ?? 'skip',
        );
        if (why) report.wrongOverlapSkips.push(`${r.id} (${r.scheduled_for.toISOString()}): ${why}`);
      }
    }
    return report;
  }

  /**
   * Whether `app` has a transaction open that holds the fencing row (`scheduler_state`): a leader
   * inside its planning transaction.
   */
  async inFencedTransaction(app: AppProcess): Promise<boolean> {
    const { rows } = await this.db.query(
      `SELECT 1 FROM pg_stat_activity a JOIN pg_locks l ON l.pid = a.pid
       WHERE a.application_name = $1 AND a.xact_start IS NOT NULL AND a.state = 'idle in transaction'
         AND l.relation = 'scheduler_state'::regclass AND l.granted`,
      [`punctual ${app.instanceId}`],
    );
    return rows.length > 0;
  }

  /** First `queued_at` after `since` (the next leader's first fire). */
  async firstFireAfter(since: number): Promise<number | null> {
    const { rows } = await this.db.query(`SELECT min(queued_at) AS at FROM task_execution WHERE queued_at > $1`, [
      new Date(since),
    ]);
    return rows[0].at ? rows[0].at.getTime() : null;
  }

  async stop(): Promise<void> {
    await Promise.all(
      [...this.schedulers, ...this.workers, ...(this.api ? [this.api] : [])].map((app) =>
        app.stop('SIGTERM').catch(() => null),
      ),
    );
    await this.db.end().catch(() => undefined);
    await this.invocations.close();
    await this.sandbox.dispose();
  }
}
