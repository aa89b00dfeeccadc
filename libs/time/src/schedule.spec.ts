import { describe, expect, it } from 'vitest';
import { jitterOffset } from './jitter.js';
import { compileSchedule, slotsBetween } from './schedule.js';
import type { ScheduleSpec } from './schedule-spec.js';
import { formatLocal } from './zone.js';
import { refusal } from './refusal.spec-helper.js';

const iso = (dates: (Date | null)[]) => dates.map((d) => d?.toISOString() ?? null);
const at = (s: string) => new Date(s);

describe('every, at, bounds and local times', () => {
  it('every counts elapsed time from its anchor, straight through a DST change', () => {
    const schedule = compileSchedule({
      kind: 'every',
      everyMs: 90 * 60_000,
      anchor: at('2026-03-29T00:15:00Z'),
      timezone: 'Europe/Berlin',
    });
    expect(iso(slotsBetween(schedule, at('2026-03-28T00:00:00Z'), at('2026-03-29T04:00:00Z'), 10))).toEqual([
      '2026-03-29T00:15:00.000Z',
      '2026-03-29T01:45:00.000Z',
      '2026-03-29T03:15:00.000Z',
    ]);
    expect(schedule.next(at('2026-03-29T01:45:00Z'))?.toISOString()).toBe('2026-03-29T03:15:00.000Z');
    expect(
      refusal(() => compileSchedule({ kind: 'every', everyMs: 999, anchor: at('2026-01-01T00:00:00Z') })).field,
    ).toBe('schedule.every');
    expect(
      refusal(() => compileSchedule({ kind: 'every', everyMs: 1.5e3 + 0.5, anchor: at('2026-01-01T00:00:00Z') })).field,
    ).toBe('schedule.every');
  });

  it('at fires once, strictly after the cursor', () => {
    const schedule = compileSchedule({ kind: 'at', runAt: at('2026-06-01T07:00:00Z') });
    expect(iso([schedule.next(at('2026-06-01T06:59:59.999Z')), schedule.next(at('2026-06-01T07:00:00Z'))])).toEqual([
      '2026-06-01T07:00:00.000Z',
      null,
    ]);
    expect(refusal(() => compileSchedule({ kind: 'at', runAt: new Date(NaN) })).field).toBe('schedule.at');
  });

  it('startAt and endAt bound every kind, inclusively', () => {
    const bounds = { startAt: at('2026-01-02T09:00:00Z'), endAt: at('2026-01-04T09:00:00Z') };
    const specs: ScheduleSpec[] = [
      { kind: 'cron', cron: '0 9 * * *', timezone: 'UTC', ...bounds },
      { kind: 'rrule', rrule: 'FREQ=DAILY', timezone: 'UTC', anchor: at('2025-12-01T09:00:00Z'), ...bounds },
      { kind: 'every', everyMs: 86_400_000, anchor: at('2025-12-01T09:00:00Z'), ...bounds },
    ];
    for (const spec of specs) {
      expect(
        iso(slotsBetween(compileSchedule(spec), at('2026-01-01T00:00:00Z'), at('2026-02-01T00:00:00Z'), 10)),
        spec.kind,
      ).toEqual(['2026-01-02T09:00:00.000Z', '2026-01-03T09:00:00.000Z', '2026-01-04T09:00:00.000Z']);
    }
    expect(
      compileSchedule({ kind: 'at', runAt: at('2026-01-05T00:00:00Z'), ...bounds }).next(at('2026-01-01T00:00:00Z')),
    ).toBeNull();
    expect(
      refusal(() =>
        compileSchedule({
          kind: 'cron',
          cron: '* * * * *',
          timezone: 'UTC',
          startAt: bounds.endAt,
          endAt: bounds.startAt,
        }),
      ).field,
    ).toBe('schedule.endAt');
  });

  it('an rrule without DTSTART starts at startAt rather than the creation anchor', () => {
    const spec: ScheduleSpec = {
      kind: 'rrule',
      rrule: 'FREQ=DAILY;COUNT=2',
      timezone: 'UTC',
      anchor: at('2026-01-01T08:00:00Z'),
      startAt: at('2026-02-01T10:30:00Z'),
    };
    expect(
      iso(slotsBetween(compileSchedule(spec), at('2026-01-01T00:00:00Z'), at('2027-01-01T00:00:00Z'), 10)),
    ).toEqual(['2026-02-01T10:30:00.000Z', '2026-02-02T10:30:00.000Z']);
  });

  it('shares one compiled schedule per expression, zone and DST policy', () => {
    const a = compileSchedule({ kind: 'cron', cron: '0 9 * * *', timezone: 'Europe/Berlin' });
    expect(compileSchedule({ kind: 'cron', cron: '0 9 * * *', timezone: 'Europe/Berlin' })).toBe(a);
    expect(compileSchedule({ kind: 'cron', cron: '0 9 * * *', timezone: 'Europe/Paris' })).not.toBe(a);
    expect(
      compileSchedule({ kind: 'cron', cron: '0 9 * * *', timezone: 'Europe/Berlin', dst: { gap: 'skip' } }),
    ).not.toBe(a);
  });

  it('refuses an unknown DST policy value', () => {
    const dst = { gap: 'later' } as unknown as { gap: 'skip' };
    expect(refusal(() => compileSchedule({ kind: 'cron', cron: '0 2 * * *', timezone: 'UTC', dst })).field).toBe(
      'schedule.dst.gap',
    );
  });

  it('formats local times with negative, fractional and historical (seconds) offsets', () => {
    expect(formatLocal(at('2026-07-01T12:00:00Z'), 'America/St_Johns')).toBe('2026-07-01T09:30:00.000-02:30');
    expect(formatLocal(at('2026-01-01T00:00:00Z'), 'Pacific/Chatham')).toBe('2026-01-01T13:45:00.000+13:45');
    expect(formatLocal(at('1850-01-01T12:00:00Z'), 'America/New_York')).toBe('1850-01-01T07:03:58.000-04:56:02');
  });

  it('jitter is deterministic per (task, slot), within [0, jitter), and spreads across tasks', () => {
    const slot = at('2026-01-01T09:00:00Z');
    expect(jitterOffset('a', slot, 60_000)).toBe(jitterOffset('a', slot, 60_000));
    const offsets = Array.from({ length: 50 }, (_, i) => jitterOffset(`task-${i}`, slot, 60_000));
    expect(offsets.every((o) => o >= 0 && o < 60_000)).toBe(true);
    expect(new Set(offsets).size).toBeGreaterThan(40);
    expect(jitterOffset('a', slot, 0)).toBe(0);
  });
});
