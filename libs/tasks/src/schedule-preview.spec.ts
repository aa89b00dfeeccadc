import { PREVIEW_MAX } from '@punctual/contract';
import { jitterOffset } from '@punctual/time';
import { describe, expect, it } from 'vitest';
import { previewSchedule, upcomingFireTimes } from './schedule-preview.js';

const at = (s: string) => new Date(s);

describe('previewSchedule', () => {
  it('previews fire times at or after `from`, in UTC and in the zone, with the zone’s offset', () => {
    expect(previewSchedule({ cron: '0 9 * * *', timezone: 'Europe/Berlin' }, at('2026-03-28T08:00:00Z'), 2)).toEqual([
      { at: '2026-03-28T08:00:00.000Z', local: '2026-03-28T09:00:00.000+01:00' },
      { at: '2026-03-29T07:00:00.000Z', local: '2026-03-29T09:00:00.000+02:00' },
    ]);
    expect(
      previewSchedule(
        { every: '1h', startAt: '2026-01-01T00:00:00Z', timezone: 'Asia/Kathmandu' },
        at('2026-01-01T00:30:00Z'),
        1,
      ),
    ).toEqual([{ at: '2026-01-01T01:00:00.000Z', local: '2026-01-01T06:45:00.000+05:45' }]);
    expect(previewSchedule({ at: '2026-01-01T00:00:00Z' }, at('2025-01-01T00:00:00Z'), 5)).toEqual([
      { at: '2026-01-01T00:00:00.000Z', local: '2026-01-01T00:00:00.000+00:00' },
    ]);
  });

  it('returns at most PREVIEW_MAX fire times (DESIGN §7: `count ≤ 1000`)', () => {
    expect(
      previewSchedule({ every: '1s', startAt: '2026-01-01T00:00:00Z' }, at('2026-01-01T00:00:00Z'), 5000),
    ).toHaveLength(PREVIEW_MAX);
    expect(PREVIEW_MAX).toBe(1000);
  });
});

describe('upcomingFireTimes', () => {
  const T0 = Date.parse('2026-06-01T12:00:00.000Z');
  const iso = (ms: number) => new Date(ms).toISOString();
  const everySecond = (
    overrides: Partial<Parameters<typeof upcomingFireTimes>[0]> = {},
  ): Parameters<typeof upcomingFireTimes>[0] => ({
    id: '00000000-0000-4000-8000-000000000001',
    name: 'hello',
    scheduleKind: 'cron',
    cron: '* * * * * *',
    rrule: null,
    runAt: null,
    everyMs: null,
    timezone: 'UTC',
    startAt: null,
    endAt: null,
    dstGap: null,
    dstOverlap: null,
    createdAt: new Date(T0 - 86_400_000),
    calendars: [],
    status: 'active',
    nextRunAt: new Date(T0 + 3000),
    lastError: null,
    jitterMs: 0,
    ...overrides,
  });

  it('starts from now: the slots planned and not yet fired first, then the schedule from the cursor', () => {
    // The planner has planned T0+1s and T0+2s (its lookahead); the cursor waits at T0+3s.
    const now = new Date(T0 + 500);
    expect(upcomingFireTimes(everySecond(), 4, now, [new Date(T0 + 1000), new Date(T0 + 2000)])).toEqual([
      iso(T0 + 1000),
      iso(T0 + 2000),
      iso(T0 + 3000),
      iso(T0 + 4000),
    ]);
    // Without them the schedule alone would skip the planned slots: the reader passes them.
    expect(upcomingFireTimes(everySecond(), 2, now)).toEqual([iso(T0 + 3000), iso(T0 + 4000)]);
  });

  it('never lists a slot whose fire time has come, even when the planner is behind', () => {
    const now = new Date(T0 + 10_500);
    expect(upcomingFireTimes(everySecond({ nextRunAt: new Date(T0) }), 3, now)).toEqual([
      iso(T0 + 11_000),
      iso(T0 + 12_000),
      iso(T0 + 13_000),
    ]);
    expect(upcomingFireTimes(everySecond({ nextRunAt: new Date(T0 + 10_000) }), 1, new Date(T0 + 10_000))).toEqual([
      iso(T0 + 11_000),
    ]);
  });

  it('with jitter, lists a slot while its fire time (slot + jitter) is still to come', () => {
    const task = everySecond({ jitterMs: 5000, nextRunAt: new Date(T0) });
    const now = new Date(T0 + 2000);
    const times = upcomingFireTimes(task, 10, now);
    expect(times).toHaveLength(10);
    for (const at of times)
      expect(Date.parse(at) + jitterOffset(task.id, new Date(at), 5000)).toBeGreaterThan(now.getTime());
    // Every slot from the cursor on that is left out has fired already.
    const firstListed = Date.parse(times[0]!);
    for (let slot = T0; slot < firstListed; slot += 1000)
      expect(slot + jitterOffset(task.id, new Date(slot), 5000)).toBeLessThanOrEqual(now.getTime());
  });

  it('a paused or completed task lists only what is already planned; a duplicate is listed once', () => {
    const now = new Date(T0);
    expect(upcomingFireTimes(everySecond({ status: 'paused' }), 5, now)).toEqual([]);
    expect(
      upcomingFireTimes(everySecond({ status: 'completed', nextRunAt: null }), 5, now, [new Date(T0 + 1000)]),
    ).toEqual([iso(T0 + 1000)]);
    expect(upcomingFireTimes(everySecond({ lastError: 'bad' }), 5, now, [new Date(T0 + 1000)])).toEqual([
      iso(T0 + 1000),
    ]);
    // A plan committed between reading the task and its planned rows: the cursor's slot is both.
    expect(upcomingFireTimes(everySecond(), 3, now, [new Date(T0 + 2000), new Date(T0 + 3000)])).toEqual([
      iso(T0 + 2000),
      iso(T0 + 3000),
      iso(T0 + 4000),
    ]);
  });
});
