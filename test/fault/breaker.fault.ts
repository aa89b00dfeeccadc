import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster } from '../support/cluster.js';
import { sleep } from '../support/processes.js';

/**
 * DESIGN §7 `policy.pauseAfter` with real processes: a webhook that always fails pauses its task
 * once three of its slots have ended dead within the window — with a note saying why, a version
 * made by the breaker, a notification — while overlap skips of a slow task are never failures.
 */
describe('fault: the failure breaker, the run limit and the schedule window', () => {
  let cluster: Cluster;
  beforeAll(async () => {
    cluster = await Cluster.start({ schedulers: 1, workers: 1, api: true });
  }, 60_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  const task = async (name: string) => (await cluster.call('GET', `/v1/tasks/${name}`)).body;

  it('pauses a task after N failed slots within the window, says why and tells its notify URL; overlap skips are not failures', async () => {
    const failing = await cluster.call('POST', '/v1/tasks', {
      name: 'br-failing',
      handler: 'http',
      payload: { url: cluster.invocations.url({ failFirst: 1_000 }) },
      schedule: { cron: '* * * * * *' },
      policy: { retry: { attempts: 1 }, pauseAfter: { failures: 3, within: '1m' } },
      notify: { url: cluster.invocations.url({ v: 9 }), on: ['dead'] },
    });
    expect(failing.status, JSON.stringify(failing.body)).toBe(201);
    const slow = await cluster.call('POST', '/v1/tasks', {
      name: 'br-slow',
      handler: 'http',
      payload: { url: cluster.invocations.url({ delay: 2_500 }) },
      schedule: { cron: '* * * * * *' },
      policy: { pauseAfter: { failures: 1, within: '1m' } },
    });
    expect(slow.status, JSON.stringify(slow.body)).toBe(201);

    const paused = await cluster.waitFor(
      async () => {
        const t = await task('br-failing');
        return t.status === 'paused' ? t : null;
      },
      20_000,
      'the breaker to pause br-failing',
    );
    expect(paused.pauseNote).toMatch(
      /^paused by the failure breaker: 3 slot\(s\) ended dead within 1m \(policy\.pauseAfter\); the last: /,
    );
    const pausedAt = Date.now();
    const dead = (await cluster.executionsOf('br-failing')).filter((e) => e.status === 'dead');
    expect(dead.length).toBeGreaterThanOrEqual(3);

    // Paused: its next slots do not run (a claim in flight at the pause may still end).
    await sleep(3_000);
    const late = (await cluster.executionsOf('br-failing')).filter(
      (e) => e.started_at && e.started_at.getTime() > pausedAt + 1_000,
    );
    expect(late).toEqual([]);
    // The version the breaker made, and its notification.
    const latest = (await cluster.call('GET', '/v1/tasks/br-failing/versions?limit=1')).body.items[0];
    expect(latest).toMatchObject({
      action: 'task.pause',
      changedBy: 'breaker',
      current: true,
      reason: paused.pauseNote,
    });
    await cluster.waitFor(
      async () => cluster.invocations.calls.some((c) => c.url.includes('v=9') && c.status === 200),
      10_000,
      'the pause notification',
    );
    // The timeline says why its slots do not run.
    const now = new Date();
    const timeline = (
      await cluster.call(
        'GET',
        `/v1/tasks/br-failing/timeline?from=${new Date(now.getTime() - 1_000).toISOString()}&to=${new Date(now.getTime() + 5_000).toISOString()}`,
      )
    ).body.items;
    expect(timeline.at(-1)).toMatchObject({ outcome: 'not_planned', reason: 'paused' });
    expect(timeline.at(-1).detail).toContain('by key breaker: "paused by the failure breaker');

    // Slow runs skipped for overlap never trip it.
    const slowRows = await cluster.executionsOf('br-slow');
    expect(slowRows.filter((e) => e.status === 'skipped').length).toBeGreaterThan(2);
    expect((await task('br-slow')).status).toBe('active');

    // A resume clears the note and starts counting again.
    const resumed = await cluster.call('POST', '/v1/tasks/br-failing/resume', { catchUp: 'skip' });
    expect(resumed.body, JSON.stringify(resumed.body)).toMatchObject({ status: 'active', pauseNote: null });
  }, 90_000);

  it('runs a task with remainingRuns: 3 exactly three times, counting down, then completes it; a window [startAt, endAt] runs only its slots', async () => {
    const limited = await cluster.call('POST', '/v1/tasks', {
      name: 'br-three',
      handler: 'http',
      payload: { url: cluster.invocations.url() },
      schedule: { cron: '* * * * * *', remainingRuns: 3 },
    });
    expect(limited.status, JSON.stringify(limited.body)).toBe(201);
    expect(limited.body.schedule.remainingRuns).toBe(3);
    const start = Math.ceil((Date.now() + 2_000) / 1000) * 1000;
    const windowed = await cluster.call('POST', '/v1/tasks', {
      name: 'br-window',
      handler: 'http',
      payload: { url: cluster.invocations.url() },
      schedule: {
        cron: '* * * * * *',
        startAt: new Date(start).toISOString(),
        endAt: new Date(start + 3_000).toISOString(),
      },
    });
    expect(windowed.status, JSON.stringify(windowed.body)).toBe(201);

    const done = await cluster.waitFor(
      async () => {
        const [three, window] = [await task('br-three'), await task('br-window')];
        return three.status === 'completed' && window.status === 'completed' ? { three, window } : null;
      },
      20_000,
      'both tasks to complete',
    );
    expect(done.three.schedule.remainingRuns).toBe(0);
    // Completed once its last slots are planned: they still run.
    await cluster.waitFor(
      async () => (await cluster.executionsOf('br-window')).filter((r) => r.status === 'succeeded').length >= 4,
      15_000,
      'the window to run',
    );
    await sleep(2_000);
    const runs = await cluster.executionsOf('br-three');
    expect(runs.map((r) => r.status)).toEqual(['succeeded', 'succeeded', 'succeeded']);
    const inWindow = await cluster.executionsOf('br-window');
    expect(inWindow.map((r) => r.scheduled_for.getTime())).toEqual([
      start,
      start + 1_000,
      start + 2_000,
      start + 3_000,
    ]);
    expect(inWindow.every((r) => r.status === 'succeeded')).toBe(true);
    // A negative run limit is refused, naming the field.
    const bad = await cluster.call('PATCH', '/v1/tasks/br-three', {
      schedule: { cron: '* * * * * *', remainingRuns: -1 },
    });
    expect([bad.status, bad.body.error.details[0].field]).toEqual([422, 'schedule.remainingRuns']);
  }, 60_000);
});
