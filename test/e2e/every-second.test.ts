import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSandbox, type Sandbox } from '../support/isolation.js';
import { TERMINAL } from '../support/cluster.js';
import { AppProcess, freePort, waitFor } from '../support/processes.js';

interface ExecutionJson {
  id: string;
  scheduledFor: string;
  status: string;
  startedAt: string | null;
}

/** The first vertical slice: a task created over HTTP fires every second, once per slot. */
describe('a task created over HTTP fires every second, end to end', () => {
  let sandbox: Sandbox;
  let apps: AppProcess[] = [];
  let api: AppProcess;
  let headers: Record<string, string>;

  beforeAll(async () => {
    sandbox = await createSandbox();
    const env = sandbox.env();
    headers = { authorization: `Bearer ${env.ADMIN_API_KEY}`, 'content-type': 'application/json' };
    api = AppProcess.start('api', env, await freePort());
    // Two schedulers started together: one leads, the other stands by.
    apps = [
      api,
      AppProcess.start('scheduler', env, await freePort(), 'scheduler-a'),
      AppProcess.start('scheduler', env, await freePort(), 'scheduler-b'),
      AppProcess.start('worker', env, await freePort()),
    ];
    await Promise.all(apps.map((app) => app.ready()));
  });

  afterAll(async () => {
    const codes = await Promise.all(apps.map((app) => app.stop('SIGTERM')));
    await sandbox?.dispose();
    // SIGTERM is a clean stop for every role.
    expect(codes).toEqual(apps.map(() => 0));
  });

  const executions = async (task = 'heartbeat'): Promise<ExecutionJson[]> => {
    const res = await fetch(`${api.url}/v1/tasks/${task}/executions?limit=500`, { headers });
    expect(res.status).toBe(200);
    return ((await res.json()) as { items: ExecutionJson[] }).items;
  };
  const createEverySecond = (name: string) =>
    fetch(`${api.url}/v1/tasks`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ name, handler: 'noop', schedule: { cron: '*/1 * * * * *' } }),
    });

  it('has exactly one leading scheduler', async () => {
    const leaderFlags = () =>
      Promise.all(
        apps
          .filter((app) => app.role === 'scheduler')
          .map(async (app) => ((await (await fetch(`${app.url}/health/ready`)).json()) as { leader: boolean }).leader),
      );
    // Once one of them leads, the other stands by.
    const leading = await waitFor(
      async () => {
        const flags = await leaderFlags();
        return flags.includes(true) && flags;
      },
      10_000,
      'a scheduler to lead',
    );
    expect(leading.sort()).toEqual([false, true]);
    const ready = (await (await fetch(`${api.url}/health/ready`)).json()) as { checks: Record<string, string> };
    expect(ready.checks).toEqual({ database: 'up', redis: 'up', migrations: 'applied' });
  });

  it('runs one succeeded execution for each consecutive second, and stops when deleted', async () => {
    const created = await createEverySecond('heartbeat');
    expect(created.status).toBe(201);
    const createdAt = Date.now();

    // The slots due a second ago or more, once there are five and each has ended.
    const window = await waitFor(
      async () => {
        const due = (await executions()).filter((e) => Date.parse(e.scheduledFor) <= Date.now() - 1_000);
        return due.length >= 5 && due.every((e) => TERMINAL.includes(e.status)) && due;
      },
      20_000,
      'five slots of the task to end',
    );
    const slots = window.map((e) => Date.parse(e.scheduledFor)).sort((a, b) => a - b);
    expect(slots.length).toBeGreaterThanOrEqual(5);
    // No duplicate slot, no gap between consecutive seconds, each one succeeded.
    expect(new Set(slots).size).toBe(slots.length);
    slots.slice(1).forEach((slot, i) => expect(slot - slots[i]!).toBe(1000));
    expect(slots[0]!).toBeLessThanOrEqual(createdAt + 1000);
    for (const e of window) expect(e.status).toBe('succeeded');

    const deleted = await fetch(`${api.url}/v1/tasks/heartbeat`, { method: 'DELETE', headers });
    expect(deleted.status).toBe(204);
    const afterDelete = await fetch(`${api.url}/v1/executions/${window[0]!.id}`, { headers });
    expect(afterDelete.status).toBe(200);

    // History is kept; nothing new is planned or run once the task is gone: not while another task,
    // created after the delete, is planned and runs two slots (the same planner and worker passes
    // would have planned and run the deleted task's).
    const countAt = await countRows(sandbox, 'heartbeat');
    expect(countAt.running + countAt.pending).toBe(0);
    const deletedAt = Date.now();
    expect((await createEverySecond('after-heartbeat')).status).toBe(201);
    await waitFor(
      async () =>
        (await executions('after-heartbeat')).filter(
          (e) => e.status === 'succeeded' && Date.parse(e.scheduledFor) > deletedAt,
        ).length >= 2,
      20_000,
      'two runs of a task created after the delete',
    );
    expect(await countRows(sandbox, 'heartbeat')).toEqual(countAt);
  });
});

async function countRows(
  sandbox: Sandbox,
  taskName: string,
): Promise<{ total: number; running: number; pending: number; succeededAfter: number }> {
  const pg = (await import('pg')).default;
  const client = new pg.Client({ connectionString: sandbox.databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query(
      `
      SELECT count(*)::int AS total,
             count(*) FILTER (WHERE status = 'running')::int AS running,
             count(*) FILTER (WHERE status IN ('scheduled', 'queued', 'retrying'))::int AS pending,
             count(*) FILTER (WHERE status = 'succeeded')::int AS "succeededAfter"
      FROM task_execution WHERE task_name = $1`,
      [taskName],
    );
    return rows[0];
  } finally {
    await client.end();
  }
}
