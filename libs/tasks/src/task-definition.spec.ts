import { TaskSpec } from '@punctual/contract';
import { describe, expect, it } from 'vitest';
import { InvalidTaskError } from './errors.js';
import { toTaskDefinition } from './task-definition.js';

/**
 * What a definition checks beyond the contract's TaskSpec (whose shape rules — the name, one
 * schedule kind, instants — the contract spec tests): instants against `now`, the schedule's bounds.
 */
describe('toTaskDefinition', () => {
  const now = new Date('2026-06-01T00:00:00Z');
  const spec = (schedule: object) => TaskSpec.parse({ name: 'x', handler: 'noop', schedule });
  const refusal = (schedule: object) => {
    try {
      toTaskDefinition(spec(schedule), now);
    } catch (error) {
      return error instanceof InvalidTaskError ? { field: error.field, code: error.code } : error;
    }
    throw new Error('expected a refusal');
  };

  it('turns a spec into columns, its first slot as the cursor', () => {
    expect(toTaskDefinition(spec({ every: '15m', startAt: '2026-06-01T09:00:00+02:00' }), now)).toMatchObject({
      scheduleKind: 'every',
      everyMs: 900_000n,
      startAt: new Date('2026-06-01T07:00:00Z'),
      nextRunAt: new Date('2026-06-01T07:00:00Z'),
      status: 'active',
      jitterMs: 0,
      maxDelayMs: 3_600_000,
    });
  });

  it('refuses a one-off in the past, and bounds that leave no slot', () => {
    expect(refusal({ at: '2026-05-31T23:59:59Z' })).toEqual({ field: 'schedule.at', code: 'invalid_schedule' });
    expect(refusal({ cron: '0 9 * * *', startAt: '2027-01-01T00:00:00Z', endAt: '2026-12-31T00:00:00Z' })).toEqual({
      field: 'schedule.endAt',
      code: 'invalid_schedule',
    });
    expect(refusal({ cron: '0 9 * * *', endAt: '2026-01-01T00:00:00Z' })).toEqual({
      field: 'schedule.endAt',
      code: 'invalid_schedule',
    });
  });
});
