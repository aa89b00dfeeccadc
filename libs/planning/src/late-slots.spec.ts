import { describe, expect, it } from 'vitest';
import { type LateSlot, resolveLateSlots } from './late-slots.js';

const now = new Date('2026-06-01T12:00:00.000Z');
const late = (
  taskId: string,
  minutesAgo: number[],
  misfire: LateSlot['misfire'],
  cursorLate = false,
  kind: LateSlot['kind'] = 'late',
): LateSlot[] =>
  minutesAgo.map((m) => ({
    id: `${taskId}@${m}`,
    taskId,
    scheduledFor: new Date(now.getTime() - m * 60_000),
    kind,
    misfire,
    cursorLate,
  }));

describe('resolveLateSlots', () => {
  it('run_once runs the most recent planned late slot and misses the others', () => {
    const d = resolveLateSlots(late('a', [90, 80, 70], 'run_once'), now, 5);
    expect(d.catchup).toEqual([{ id: 'a@70', fireAt: now }]);
    expect(d.missed).toEqual(['a@90', 'a@80']);
  });

  it('run_once leaves the run to the planner when the cursor is late too (a more recent late slot is coming)', () => {
    const d = resolveLateSlots(late('a', [90, 80], 'run_once', true), now, 5);
    expect(d.catchup).toEqual([]);
    expect(d.missed).toEqual(['a@90', 'a@80']);
  });

  it('skip misses them all', () => {
    expect(resolveLateSlots(late('a', [90, 80], 'skip'), now, 5)).toEqual({ catchup: [], missed: ['a@90', 'a@80'] });
  });

  it('run_all runs the most recent catchupMax, in slot order, one millisecond apart', () => {
    const d = resolveLateSlots(late('a', [50, 40, 30, 20], 'run_all'), now, 3);
    expect(d.missed).toEqual(['a@50']);
    expect(d.catchup.map((c) => [c.id, c.fireAt.getTime() - now.getTime()])).toEqual([
      ['a@40', 0],
      ['a@30', 1],
      ['a@20', 2],
    ]);
  });

  it('run_once: a catch-up that never started gives way to a more recent late slot', () => {
    const d = resolveLateSlots(
      [...late('a', [30], 'run_once', false, 'catchup'), ...late('a', [20, 10], 'run_once')],
      now,
      5,
    );
    expect(d.missed).toEqual(['a@30', 'a@20']);
    expect(d.catchup.map((c) => c.id)).toEqual(['a@10']);
  });

  it('a catch-up that stays the most recent is left as it is', () => {
    const d = resolveLateSlots(
      [...late('a', [20], 'run_once'), ...late('a', [10], 'run_once', false, 'catchup')],
      now,
      5,
    );
    expect(d).toEqual({ catchup: [], missed: ['a@20'] });
  });

  it('decides each task on its own', () => {
    const d = resolveLateSlots([...late('a', [20, 10], 'skip'), ...late('b', [20, 10], 'run_once')], now, 5);
    expect(d.missed).toEqual(['a@20', 'a@10', 'b@20']);
    expect(d.catchup.map((c) => c.id)).toEqual(['b@10']);
  });
});
