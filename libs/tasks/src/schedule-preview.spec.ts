import { PREVIEW_MAX } from '@punctual/contract';
import { describe, expect, it } from 'vitest';
import { previewSchedule } from './schedule-preview.js';

const at = (s: string) => new Date(s);

describe('previewSchedule', () => {
  it('previews fire times at or after `from`, in UTC and in the zone, with the zone’s offset', () => {
    expect(previewSchedule({ cron: '0 9 * * *', timezone: 'Europe/Berlin' }, at('2026-03-28T08:00:00Z'), 2)).toEqual([
      { at: '2026-03-28T08:00:00.000Z', local: '2026-03-28T09:00:00.000+01:00' },
      { at: '2026-03-29T07:00:00.000Z', local: '2026-03-29T09:00:00.000+02:00' },
    ]);
    expect(previewSchedule({ every: '1h', startAt: '2026-01-01T00:00:00Z', timezone: 'Asia/Kathmandu' }, at('2026-01-01T00:30:00Z'), 1)).toEqual([
      { at: '2026-01-01T01:00:00.000Z', local: '2026-01-01T06:45:00.000+05:45' },
    ]);
    expect(previewSchedule({ at: '2026-01-01T00:00:00Z' }, at('2025-01-01T00:00:00Z'), 5)).toEqual([
      { at: '2026-01-01T00:00:00.000Z', local: '2026-01-01T00:00:00.000+00:00' },
    ]);
  });

  it('returns at most PREVIEW_MAX fire times (DESIGN §7: `count ≤ 1000`)', () => {
    expect(previewSchedule({ every: '1s', startAt: '2026-01-01T00:00:00Z' }, at('2026-01-01T00:00:00Z'), 5000)).toHaveLength(PREVIEW_MAX);
    expect(PREVIEW_MAX).toBe(1000);
  });
});
