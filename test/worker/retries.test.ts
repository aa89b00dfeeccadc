import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster } from '../support/cluster.js';

describe('retries, the dead letter, replay and cancel', () => {
  let cluster: Cluster;
  beforeAll(async () => {
    cluster = await Cluster.start({ schedulers: 1, workers: 1, api: true });
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  const inAFewSeconds = () => new Date(Date.now() + 1_500).toISOString();
  const onlyExecution = async (task: string) =>
    cluster.waitFor(async () => (await cluster.executionsOf(task))[0], 10_000, `${task} execution`);
  const waitStatus = (task: string, status: string, timeoutMs = 20_000) =>
    cluster.waitFor(
      async () => (await cluster.executionsOf(task)).find((e) => e.status === status),
      timeoutMs,
      `${task} ${status}`,
    );

  it('retries with exponential backoff, then dead; listed in the dead letter; a replay runs again', async () => {
    await cluster.call('POST', '/v1/tasks', {
      name: 'flaky',
      handler: 'fail',
      payload: { succeedOnAttempt: 4 },
      schedule: { at: inAFewSeconds() },
      policy: { retry: { attempts: 3, backoff: '300ms', maxBackoff: '10s' } },
    });
    const dead = await waitStatus('flaky', 'dead');
    expect(dead.attempt).toBe(3);
    expect(dead.error).toMatch(/failed on purpose \(attempt 3\)/);
    const detail = (await cluster.call('GET', `/v1/executions/${dead.id}`)).body;
    const starts = detail.events
      .filter((e: { to: string }) => e.to === 'running')
      .map((e: { at: string }) => Date.parse(e.at));
    expect(starts).toHaveLength(3);
    // Backoff 300 ms × 2^(n-1), ±20 %: the second wait is longer than the first.
    const gaps = [starts[1] - starts[0], starts[2] - starts[1]];
    expect(gaps[0]).toBeGreaterThanOrEqual(240);
    expect(gaps[1]).toBeGreaterThanOrEqual(480);
    // (`queued` may come before or not at all: a worker can claim a fired row before it is marked.)
    expect(detail.events.map((e: { to: string }) => e.to).filter((to: string) => to !== 'queued')).toEqual([
      'running',
      'retrying',
      'running',
      'retrying',
      'running',
      'dead',
    ]);

    const letter = await cluster.call('GET', '/v1/executions?status=dead');
    expect(letter.body.items.map((e: { id: string }) => e.id)).toContain(dead.id);

    const replay = await cluster.call('POST', `/v1/executions/${dead.id}/retry`);
    expect(replay.status).toBe(202);
    expect(replay.body.status).toBe('retrying');
    const done = await waitStatus('flaky', 'succeeded');
    expect(done.attempt).toBe(4);
    expect((await cluster.call('POST', `/v1/executions/${dead.id}/retry`)).status).toBe(409);
  });

  it('an UnrecoverableError goes straight to dead', async () => {
    await cluster.call('POST', '/v1/tasks', {
      name: 'hopeless',
      handler: 'fail',
      payload: { unrecoverable: true, message: 'bad input' },
      schedule: { at: inAFewSeconds() },
    });
    const dead = await waitStatus('hopeless', 'dead');
    expect(dead.attempt).toBe(1);
    expect(dead.error).toBe('UnrecoverableError: bad input');
  });

  it('cancels a running execution: its handler is aborted and its late result is fenced out', async () => {
    await cluster.call('POST', '/v1/tasks', {
      name: 'long',
      handler: 'sleep',
      payload: { ms: 60_000 },
      schedule: { at: inAFewSeconds() },
    });
    const running = await waitStatus('long', 'running');
    // The handler's progress reaches Bull Board (the sleep handler reports 0 % as it starts).
    // It is shown in the queue of its handler, `executions.sleep`.
    const board = await cluster.call(
      'GET',
      '/admin/queues/api/queues?activeQueue=executions.sleep&status=active&page=1&jobsPerPage=10',
    );
    const queue = board.body.queues.find((q: { name: string }) => q.name === 'executions.sleep');
    const job = queue.jobs.find((j: { id: string }) => j.id === running.id);
    expect(job?.progress).toBe(0);
    const res = await cluster.call('POST', `/v1/executions/${running.id}/cancel`);
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('cancelled');
    await cluster.waitFor(
      async () => cluster.workers[0]!.output.includes('"reason":"cancelled"'),
      5_000,
      'the worker aborting',
    );
    expect((await onlyExecution('long')).status).toBe('cancelled');
    expect((await cluster.call('POST', `/v1/executions/${running.id}/cancel`)).status).toBe(409);
  });

  it('cancels a pending execution', async () => {
    await cluster.call('POST', '/v1/tasks', { name: 'later', handler: 'noop', schedule: { cron: '0 0 1 1 *' } });
    const { rows } = await cluster.db.query(
      `INSERT INTO task_execution (id, task_id, task_name, scheduled_for, fire_at, task_version, status)
       SELECT gen_random_uuid(), id, name, now() + interval '1 day', now() + interval '1 day', version, 'scheduled' FROM task WHERE name = 'later' RETURNING id`,
    );
    const res = await cluster.call('POST', `/v1/executions/${rows[0].id}/cancel`);
    expect(res.body.status).toBe('cancelled');
    expect((await cluster.call('POST', `/v1/executions/00000000-0000-4000-8000-000000000000/cancel`)).status).toBe(404);
  });
});
