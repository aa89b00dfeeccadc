import { describe, expect, it } from 'vitest';
import { InvalidTaskError } from './errors.js';
import { toTaskDefinition } from './task-definition.js';

describe('toTaskDefinition', () => {
  const now = new Date('2026-06-01T00:00:00Z');

  it.each([
    ['cron', null],
    ['cron', 5],
    ['rrule', {}],
    ['at', []],
  ])('refuses schedule.%s = %j with an error naming the field, never a crash', (field, value) => {
    const input = { name: 'x', handler: 'noop', schedule: { [field]: value } } as never;
    expect(() => toTaskDefinition(input, now)).toThrow(InvalidTaskError);
    expect(() => toTaskDefinition(input, now)).toThrow(`schedule.${field}`);
  });

  it('refuses a timezone that is not a string', () => {
    expect(() => toTaskDefinition({ name: 'x', handler: 'noop', schedule: { cron: '* * * * *', timezone: 5 } } as never, now)).toThrow('schedule.timezone');
  });
});
