import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster } from '../support/cluster.js';
import { sleep } from '../support/processes.js';

/** The local date of `at` in `zone`, YYYY-MM-DD. */
const localDate = (zone: string, at: number) =>
  new Intl.DateTimeFormat('en-CA', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(
    new Date(at),
  );

/** A zone whose local date stays the same for the next minutes (so "today" means one thing throughout). */
function zoneWithDayAhead(): string {
  return ['UTC', 'Asia/Tokyo', 'America/Los_Angeles'].find(
    (zone) => localDate(zone, Date.now()) === localDate(zone, Date.now() + 5 * 60_000),
  )!;
}

/**
 * Calendars and task health against real processes: a calendar edited while its task's slots are
 * planned (DESIGN §4, §6), and each health state reached by real runs (DESIGN §8).
 */
describe('calendars and task health, end to end', () => {
  let cluster: Cluster;
  beforeAll(async () => {
    cluster = await Cluster.start({ schedulers: 1, workers: 1, api: true });
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it('a calendar edit withdraws the planned slots of a newly excluded day and plans them again when it is no longer: none lost, none doubled', async () => {
    const zone = zoneWithDayAhead();
    const today = localDate(zone, Date.now());
    const elsewhere = '2031-01-01';
    expect((await cluster.call('PUT', '/v1/calendars/edited', { timezone: zone, dates: [elsewhere] })).status).toBe(
      201,
    );
    // Default policies; every run calls the webhook: what a user would count.
    const created = await cluster.call('POST', '/v1/tasks', {
      name: 'edited-calendar',
      handler: 'http',
      payload: { url: cluster.invocations.url() },
      schedule: { cron: '* * * * * *', exclude: ['edited'] },
    });
    expect(created.status).toBe(201);
    await cluster.waitFor(
      async () => (await cluster.executionsOf('edited-calendar')).filter((e) => e.status === 'succeeded').length >= 3,
      20_000,
      'runs',
    );

    const excludeFrom = Date.now();
    expect(
      (await cluster.call('PUT', '/v1/calendars/edited', { timezone: zone, dates: [elsewhere, today] })).status,
    ).toBe(200);
    const excluded = Date.now();
    await sleep(4_000);
    const includeFrom = Date.now();
    expect((await cluster.call('PUT', '/v1/calendars/edited', { timezone: zone, dates: [elsewhere] })).status).toBe(
      200,
    );
    const included = Date.now();
    await sleep(5_000);
    const until = Math.floor((Date.now() - 2_000) / 1000) * 1000;
    await cluster.settle(until);

    const rows = (await cluster.executionsOf('edited-calendar')).filter(
      (e) => e.trigger === 'schedule' && e.scheduled_for.getTime() <= until,
    );
    const first = rows[0]!.scheduled_for.getTime();
    const calls = cluster.invocations.succeededBy();
    const bySlot = new Map(rows.map((r) => [r.scheduled_for.getTime(), r]));
    const problems: string[] = [];
    for (let slot = first; slot <= until; slot += 1000) {
      const row = bySlot.get(slot);
      const ran = row ? (calls.get(row.id) ?? 0) : 0;
      const at = new Date(slot).toISOString();
      if (ran > 1) problems.push(`${at} ran ${ran} times`);
      // Before the first edit began, and after the second one ended (a second's margin for the
      // plan that follows it): every slot ran once. Between the two edits: none ran.
      if ((slot < excludeFrom || slot > included + 1_000) && (row?.status !== 'succeeded' || ran !== 1))
        problems.push(`${at} should have run once: ${row?.status ?? 'no row'}, ${ran} call(s)`);
      if (slot > excluded && slot < includeFrom && ran > 0) problems.push(`${at} ran on an excluded day`);
    }
    expect(problems).toEqual([]);
    // Between the edits the task planned nothing: its slots were withdrawn, not skipped or missed.
    expect(rows.filter((r) => r.scheduled_for.getTime() > excluded && r.scheduled_for.getTime() < includeFrom)).toEqual(
      [],
    );
    await cluster.call('DELETE', '/v1/tasks/edited-calendar');
  });

  it('health follows real runs: ok, failing (a webhook that always fails), paused, and late once the worker is gone; slo series only for tasks with an slo', async () => {
    const every = { cron: '* * * * * *' };
    const tasks = [
      { name: 'health-ok', handler: 'noop', schedule: every, slo: { startWithin: '2s' } },
      {
        name: 'health-failing',
        handler: 'http',
        payload: { url: cluster.invocations.url({ failFirst: 1_000_000 }) },
        schedule: every,
        policy: { retry: { attempts: 1 } },
        slo: { startWithin: '2s' },
      },
      { name: 'health-paused', handler: 'noop', schedule: every },
      { name: 'health-no-slo', handler: 'noop', schedule: every },
    ];
    for (const task of tasks) expect((await cluster.call('POST', '/v1/tasks', task)).status).toBe(201);
    expect((await cluster.call('POST', '/v1/tasks/health-paused/pause', {})).status).toBe(200);
    const state = async (name: string) => (await cluster.call('GET', `/v1/tasks/${name}`)).body.health;

    await cluster.waitFor(async () => (await state('health-ok')).state === 'ok', 20_000, 'health-ok ok');
    const failing = await cluster.waitFor(
      async () => {
        const health = await state('health-failing');
        return health.state === 'failing' && health.consecutiveFailures >= 2 && health;
      },
      20_000,
      'health-failing failing',
    );
    expect(failing.lastSuccessAt).toBeNull();
    expect(await state('health-paused')).toMatchObject({ state: 'paused' });
    const ok = await state('health-ok');
    expect(Date.parse(ok.lastSuccessAt)).toBeGreaterThan(Date.now() - 10_000);
    expect(Date.parse(ok.lastSlotAt)).toBeGreaterThan(Date.now() - 5_000);
    expect(ok.consecutiveFailures).toBe(0);
    const listed = await cluster.call('GET', '/v1/tasks?health=failing');
    expect(listed.body.items.map((t: { name: string }) => t.name)).toEqual(['health-failing']);

    // The per-task series: only the tasks with an slo, from the worker that ran them and the scheduler.
    const scrape = async (app: { url: string }) => (await fetch(`${app.url}/metrics`)).text();
    const worker = await scrape(cluster.workers[0]!);
    expect(worker).toMatch(/^punctual_task_slots_total\{task="health-ok"\} [1-9]/m);
    expect(worker).toMatch(/^punctual_task_late_slots_total\{task="health-ok"\} \d+/m);
    expect(worker).not.toMatch(/task="health-no-slo"/);
    const scheduler = await cluster.waitFor(
      async () => {
        const text = await scrape(cluster.schedulers[0]!);
        return /^punctual_task_last_success_timestamp_seconds\{task="health-ok"\} [1-9]/m.test(text) && text;
      },
      30_000,
      'the slo series of the scheduler',
    );
    expect(scheduler).toMatch(/^punctual_task_expected_interval_seconds\{task="health-ok"\} [0-9.]+$/m);
    expect(scheduler).toMatch(/^punctual_task_last_success_timestamp_seconds\{task="health-failing"\} [1-9]/m);
    expect(scheduler).not.toMatch(/task="health-no-slo"|task="health-paused"/);

    // No worker: due slots wait unstarted past slo.startWithin.
    cluster.workers[0]!.signal('SIGKILL');
    await cluster.waitFor(async () => (await state('health-ok')).state === 'late', 20_000, 'health-ok late');
    expect(
      (await cluster.call('GET', '/v1/tasks?health=late')).body.items.map((t: { name: string }) => t.name),
    ).toContain('health-ok');
  });
});
