import { ScheduleSpec } from '@punctual/contract';
import { describe, expect, it } from 'vitest';
import { mergeExcluded, unexcludedPreview, unexcludedSchedule } from './excluded-fire-times.js';

/** Noon UTC on each of `days` of June 2026. */
const june = (...days: number[]) => days.map((d) => `2026-06-${String(d).padStart(2, '0')}T12:00:00.000Z`);
const base = { timezone: 'UTC', startAt: null, endAt: null, remainingRuns: null, jitter: '0s' };

describe('excluded fire times', () => {
  it('puts the fire times the excluded days leave out among the real ones, in order', () => {
    const merged = mergeExcluded(june(1, 2, 5, 6), june(1, 2, 3, 4, 5, 6, 7, 8));
    expect(merged).toEqual([
      { at: june(1)[0], excluded: false },
      { at: june(2)[0], excluded: false },
      { at: june(3)[0], excluded: true },
      { at: june(4)[0], excluded: true },
      { at: june(5)[0], excluded: false },
      { at: june(6)[0], excluded: false },
    ]);
    // The real fire times are all kept; past the last of them nothing is known to be excluded, unless it is the task's last.
    expect(merged.filter((t) => !t.excluded).map((t) => t.at)).toEqual(june(1, 2, 5, 6));
    expect(mergeExcluded(june(1, 2), june(1, 2, 3, 4), true).map((t) => t.excluded)).toEqual([
      false,
      false,
      true,
      true,
    ]);
  });

  it('compares instants, not their spelling', () => {
    expect(
      mergeExcluded(['2026-06-01T12:00:00Z', '2026-06-03T12:00:00Z'], june(1, 2, 3)).map((t) => t.excluded),
    ).toEqual([false, true, false]);
  });

  it('marks nothing when the preview is not the same schedule, or when there is nothing to compare', () => {
    // 12:00 real, 12:07 previewed: cron H hashed by another name.
    const other = june(1, 2, 3, 4).map((at) => at.replace('12:00', '12:07'));
    expect(mergeExcluded(june(1, 3), other).every((t) => !t.excluded)).toBe(true);
    expect(mergeExcluded(june(1, 3), [])).toEqual([
      { at: june(1)[0], excluded: false },
      { at: june(3)[0], excluded: false },
    ]);
    expect(mergeExcluded([], june(1, 2))).toEqual([]);
    // A preview shorter than the real list (more excluded days than it counted) still marks what it covers.
    expect(mergeExcluded(june(1, 3, 9), june(1, 2, 3)).map((t) => t.excluded)).toEqual([false, true, false, false]);
  });

  it('asks the preview for the task schedule without its exclusions, in the shape the contract takes', () => {
    const schedule = {
      ...base,
      cron: '0 9 * * *',
      timezone: 'Europe/Berlin',
      dst: { gap: 'skip' as const },
      exclude: ['holidays'],
    };
    const spec = unexcludedSchedule(schedule);
    expect(spec).toEqual({ cron: '0 9 * * *', timezone: 'Europe/Berlin', dst: { gap: 'skip' } });
    expect(ScheduleSpec.safeParse(spec).success).toBe(true);
    const every = unexcludedSchedule({
      ...base,
      every: '15m',
      startAt: '2026-06-01T00:00:00.000Z',
      endAt: '2027-01-01T00:00:00.000Z',
    });
    expect(every).toEqual({
      every: '15m',
      timezone: 'UTC',
      startAt: '2026-06-01T00:00:00.000Z',
      endAt: '2027-01-01T00:00:00.000Z',
    });
    expect(ScheduleSpec.safeParse(every).success).toBe(true);

    const upcoming = june(1, 2);
    expect(unexcludedPreview({ schedule, upcoming }, 40)).toEqual({ schedule: spec, from: upcoming[0], count: 40 });
    expect(unexcludedPreview({ schedule: { ...schedule, exclude: [] }, upcoming }, 40)).toBeNull();
    expect(unexcludedPreview({ schedule, upcoming: [] }, 40)).toBeNull();
    expect(
      unexcludedPreview({ schedule: { ...base, at: upcoming[0], exclude: ['holidays'] }, upcoming }, 40),
    ).toBeNull();
  });
});
