import { compileSchedule } from '@punctual/time';
import { describe, expect, it } from 'vitest';
import { replanUnstarted, type UnstartedSlot } from './replan.js';

const now = new Date('2026-06-01T11:59:59.000Z');
const task = { id: '00000000-0000-4000-8000-000000000001', planVersion: 7, overlap: 'skip' as const, jitterMs: 0 };
const row = (id: string, iso: string, trigger: UnstartedSlot['trigger'] = 'schedule'): UnstartedSlot => ({
  id,
  scheduledFor: new Date(iso),
  fireAt: new Date(iso),
  trigger,
});
const everyMinute = compileSchedule({ kind: 'cron', cron: '* * * * *', timezone: 'UTC' });
const everyTwoMinutes = compileSchedule({ kind: 'cron', cron: '*/2 * * * *', timezone: 'UTC' });

describe('replanUnstarted', () => {
  it('keeps a planned slot the new schedule also has: one run, under the new definition', () => {
    const d = replanUnstarted([row('noon', '2026-06-01T12:00:00Z')], now, task, everyTwoMinutes);
    expect(d).toEqual({
      keep: [{ id: 'noon', fireAt: new Date('2026-06-01T12:00:00Z'), taskVersion: 7, exclusive: true }],
      withdraw: [],
    });
  });

  it('withdraws a planned slot still to come that the new schedule does not have', () => {
    const d = replanUnstarted(
      [row('a', '2026-06-01T12:00:00Z'), row('b', '2026-06-01T12:01:00Z')],
      now,
      task,
      everyTwoMinutes,
    );
    expect(d.keep.map((k) => k.id)).toEqual(['a']);
    expect(d.withdraw).toEqual(['b']);
  });

  it('keeps slots that have come, and runs that are not scheduled slots, whatever the new schedule', () => {
    const d = replanUnstarted(
      [
        row('due', '2026-06-01T11:59:00Z'),
        row('manual', '2026-06-01T12:01:00Z', 'manual'),
        row('backfill', '2026-06-01T12:01:30Z', 'backfill'),
      ],
      now,
      task,
      everyTwoMinutes,
    );
    expect(d.keep.map((k) => k.id)).toEqual(['due', 'manual', 'backfill']);
    expect(d.withdraw).toEqual([]);
  });

  it('a change that leaves the schedule alone keeps every row, re-versioned, with its fire_at', () => {
    const d = replanUnstarted(
      [row('a', '2026-06-01T12:00:00Z'), row('b', '2026-06-01T12:01:00Z')],
      now,
      { ...task, overlap: 'allow' },
      null,
    );
    expect(d.keep).toEqual([
      { id: 'a', fireAt: new Date('2026-06-01T12:00:00Z'), taskVersion: 7, exclusive: false },
      { id: 'b', fireAt: new Date('2026-06-01T12:01:00Z'), taskVersion: 7, exclusive: false },
    ]);
  });

  it('a kept slot takes the jitter of the new definition (fire_at moves, the slot does not)', () => {
    const d = replanUnstarted([row('a', '2026-06-01T12:00:00Z')], now, { ...task, jitterMs: 30_000 }, everyMinute);
    const shift = d.keep[0]!.fireAt.getTime() - Date.parse('2026-06-01T12:00:00Z');
    expect(shift).toBeGreaterThanOrEqual(0);
    expect(shift).toBeLessThan(30_000);
  });
});
