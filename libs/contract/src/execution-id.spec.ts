import { describe, expect, it } from 'vitest';
import { executionIdFor, slotOfExecutionId } from './execution-id.js';

describe('execution ids', () => {
  it('are UUIDv7s that carry their slot to the millisecond', () => {
    for (const at of ['2026-12-02T09:00:00.000Z', '1970-01-01T00:00:00.001Z', '2099-12-31T23:59:59.999Z']) {
      const slot = new Date(at);
      const id = executionIdFor(slot);
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(slotOfExecutionId(id)).toEqual(slot);
    }
  });

  it('differ for one slot, and sort by slot', () => {
    const slot = new Date('2026-12-02T09:00:00Z');
    const ids = new Set(Array.from({ length: 1000 }, () => executionIdFor(slot)));
    expect(ids.size).toBe(1000);
    expect(executionIdFor(new Date(slot.getTime() - 1)) < executionIdFor(slot)).toBe(true);
  });

  it('name no slot when they are not UUIDv7s', () => {
    expect(slotOfExecutionId('2764a6cf-e3f3-4591-b349-3551d2a53e86')).toBeNull();
    expect(slotOfExecutionId('not an id')).toBeNull();
    expect(() => executionIdFor(new Date(Number.NaN))).toThrow(RangeError);
  });
});
