import { compileSchedule } from '@punctual/time';
import { describe, expect, it } from 'vitest';
import { type PlannableTask, planTaskSlots, type SlotPlannerOptions } from './slot-planner.js';

const T0 = Date.parse('2026-06-01T12:00:00.000Z');
let ids = 0;
const options: SlotPlannerOptions = {
  lookaheadMs: 2000,
  catchupMax: 5,
  maxSlotsPerPass: 10_000,
  newId: () => `id-${++ids}`,
};

function task(overrides: Partial<PlannableTask> = {}): PlannableTask {
  return {
    id: '00000000-0000-4000-8000-000000000001',
    name: 't',
    planVersion: 1,
    overlap: 'skip',
    misfire: 'run_once',
    maxDelayMs: 60_000,
    jitterMs: 0,
    handler: 'noop',
    nextRunAt: new Date(T0),
    ...overrides,
  };
}

const everySecond = compileSchedule({ kind: 'cron', cron: '* * * * * *', timezone: 'UTC' });
const everyMinute = compileSchedule({ kind: 'cron', cron: '* * * * *', timezone: 'UTC' });
const iso = (ms: number) => new Date(ms).toISOString();

describe('planTaskSlots', () => {
  it('plans every slot from the cursor to now + lookahead, and moves the cursor past them', () => {
    const plan = planTaskSlots(task(), everySecond, new Date(T0 + 500), options);
    expect(plan.executions.map((e) => iso(e.scheduledFor.getTime()))).toEqual([
      iso(T0),
      iso(T0 + 1000),
      iso(T0 + 2000),
    ]);
    expect(plan.executions.every((e) => e.status === 'scheduled' && e.trigger === 'schedule')).toBe(true);
    expect(plan.advance.nextRunAt?.getTime()).toBe(T0 + 3000);
    expect(plan.advance.lastScheduledFor?.getTime()).toBe(T0 + 2000);
  });

  it('under a run limit plans no more runs than remain, and ends the schedule once it is spent; missed slots are not runs', () => {
    const two = planTaskSlots(task({ remainingRuns: 2 }), everySecond, new Date(T0 + 500), options);
    expect(two.executions.map((e) => e.scheduledFor.getTime())).toEqual([T0, T0 + 1000]);
    expect(two.advance).toMatchObject({ nextRunAt: null, runs: 2 });
    const plenty = planTaskSlots(task({ remainingRuns: 10 }), everySecond, new Date(T0 + 500), options);
    expect(plenty.advance).toMatchObject({ nextRunAt: new Date(T0 + 3000), runs: 3 });
    expect(planTaskSlots(task({ remainingRuns: null }), everySecond, new Date(T0 + 500), options).advance.runs).toBe(3);
    // A backlog under misfire skip: every slot missed, none counted against the limit.
    const late = planTaskSlots(
      task({ remainingRuns: 1, misfire: 'skip', maxDelayMs: 1_000 }),
      everySecond,
      new Date(T0 + 3_500),
      { ...options, lookaheadMs: 0 },
    );
    expect(late.executions.filter((e) => e.status === 'missed')).toHaveLength(3);
    expect(late.advance.runs).toBe(1);
  });

  it('computes from the cursor, never from now: slots between the two are not skipped', () => {
    const plan = planTaskSlots(task({ maxDelayMs: 3_600_000 }), everySecond, new Date(T0 + 10_000), options);
    const slots = plan.executions.map((e) => e.scheduledFor.getTime());
    expect(slots[0]).toBe(T0);
    expect(slots).toHaveLength(13);
  });

  it('plans nothing before the cursor is due', () => {
    const plan = planTaskSlots(task({ nextRunAt: new Date(T0 + 60_000) }), everySecond, new Date(T0), options);
    expect(plan.executions).toEqual([]);
    expect(plan.advance.nextRunAt?.getTime()).toBe(T0 + 60_000);
  });

  it('run_once: runs the most recent late slot now and records the others as missed', () => {
    const now = new Date(T0 + 10 * 60_000 + 30_000);
    const plan = planTaskSlots(task({ misfire: 'run_once' }), everyMinute, now, options);
    const late = plan.executions.filter((e) => e.scheduledFor.getTime() < now.getTime() - 60_000);
    const catchup = plan.executions.filter((e) => e.trigger === 'catchup');
    expect(catchup).toHaveLength(1);
    expect(catchup[0]!.fireAt).toEqual(now);
    expect(catchup[0]!.scheduledFor.getTime()).toBe(T0 + 9 * 60_000);
    // It stands in for every late slot of the pass, the ones only counted too: from the cursor on.
    expect(catchup[0]!.coversFrom?.getTime()).toBe(T0);
    // 10 late slots (T0 … T0+9m): 1 runs, 4 missed rows (catchupMax 5 keeps the newest 5), 5 counted only.
    expect(late.filter((e) => e.status === 'missed')).toHaveLength(4);
    expect(plan.advance.missed).toBe(9);
    // T0+10m is within maxDelay: it runs normally.
    expect(plan.executions.find((e) => e.scheduledFor.getTime() === T0 + 10 * 60_000)?.trigger).toBe('schedule');
  });

  it('skip: records every late slot as missed', () => {
    const now = new Date(T0 + 3 * 60_000 + 30_000);
    const plan = planTaskSlots(task({ misfire: 'skip' }), everyMinute, now, options);
    expect(plan.executions.filter((e) => e.status === 'missed').map((e) => e.scheduledFor.getTime())).toEqual([
      T0,
      T0 + 60_000,
      T0 + 120_000,
    ]);
    expect(plan.executions.some((e) => e.trigger === 'catchup')).toBe(false);
    expect(plan.advance.missed).toBe(3);
  });

  it('skip: the first missed row stands for the late slots before it only counted, the others for none', () => {
    const now = new Date(T0 + 8 * 60_000 + 30_000);
    const plan = planTaskSlots(task({ misfire: 'skip' }), everyMinute, now, options);
    const missed = plan.executions.filter((e) => e.status === 'missed');
    // 8 late slots past maxDelay: the newest 5 are rows, the 3 before them only counted.
    expect(missed.map((e) => e.scheduledFor.getTime())).toEqual([3, 4, 5, 6, 7].map((m) => T0 + m * 60_000));
    expect(missed.map((e) => e.coversFrom?.getTime() ?? null)).toEqual([T0, null, null, null, null]);
    // With nothing only counted before it, the first missed row stands for itself alone.
    const short = planTaskSlots(task({ misfire: 'skip' }), everyMinute, new Date(T0 + 3 * 60_000 + 30_000), options);
    expect(short.executions.every((e) => e.coversFrom === undefined)).toBe(true);
  });

  it('run_all: runs up to catchupMax late slots, the rest are missed', () => {
    const now = new Date(T0 + 8 * 60_000 + 30_000);
    const plan = planTaskSlots(task({ misfire: 'run_all' }), everyMinute, now, options);
    const catchups = plan.executions.filter((e) => e.trigger === 'catchup');
    expect(catchups).toHaveLength(5);
    // The first stands in for the 3 late slots only counted before it too; each other for its own slot.
    expect(catchups[0]!.coversFrom?.getTime()).toBe(T0);
    expect(catchups.slice(1).every((e) => e.coversFrom?.getTime() === e.scheduledFor.getTime())).toBe(true);
    expect(plan.advance.missed).toBe(3);
  });

  it('completes the cursor when the schedule ends', () => {
    const at = compileSchedule({ kind: 'at', runAt: new Date(T0 + 1000) });
    const plan = planTaskSlots(task({ nextRunAt: new Date(T0 + 1000) }), at, new Date(T0), options);
    expect(plan.executions).toHaveLength(1);
    expect(plan.advance.nextRunAt).toBeNull();
  });

  it('moves fire_at by the jitter but never the slot', () => {
    const plan = planTaskSlots(task({ jitterMs: 500 }), everySecond, new Date(T0 + 500), options);
    for (const e of plan.executions) {
      expect(e.scheduledFor.getTime() % 1000).toBe(0);
      expect(e.fireAt.getTime() - e.scheduledFor.getTime()).toBeGreaterThanOrEqual(0);
      expect(e.fireAt.getTime() - e.scheduledFor.getTime()).toBeLessThan(500);
    }
    const again = planTaskSlots(task({ jitterMs: 500 }), everySecond, new Date(T0 + 500), options);
    expect(again.executions.map((e) => e.fireAt)).toEqual(plan.executions.map((e) => e.fireAt));
  });

  it('a backlog longer than one pass is decided in one pass, without visiting every slot: the latest catchupMax run, the rest counted', () => {
    // 39 late slots, 10 examined per pass, catchupMax 5.
    const small = { ...options, maxSlotsPerPass: 10 };
    const now = new Date(T0 + 40 * 60_000);
    const plan = planTaskSlots(task({ misfire: 'run_all', maxDelayMs: 60_000 }), everyMinute, now, small);
    const lateRows = plan.executions.filter((e) => e.scheduledFor.getTime() < now.getTime() - 60_000);
    // …the five most recent late slots, in slot order, fired in that order.
    const catchup = lateRows.filter((e) => e.trigger === 'catchup');
    expect(catchup.map((e) => e.scheduledFor.getTime())).toEqual([34, 35, 36, 37, 38].map((m) => T0 + m * 60_000));
    expect(catchup.map((e) => e.fireAt.getTime())).toEqual([0, 1, 2, 3, 4].map((i) => now.getTime() + i));
    expect(lateRows.filter((e) => e.status === 'missed')).toHaveLength(0);
    expect(plan.advance.missed).toBe(34);
    expect(plan.advance.nextRunAt!.getTime()).toBeGreaterThan(now.getTime() - 60_000);
  });

  it('a week-long backlog of an every-second task costs what a short one does: counted exactly, catchupMax rows', () => {
    const now = new Date(T0 + 7 * 86_400_000);
    for (const misfire of ['run_once', 'skip', 'run_all'] as const) {
      const plan = planTaskSlots(task({ misfire, maxDelayMs: 60_000 }), everySecond, now, options);
      // Slots [T0, now - 60 s) are late: 7 days of seconds, less the last minute.
      const lateSlots = 7 * 86_400 - 60;
      const rows = plan.executions.filter((e) => e.scheduledFor.getTime() < now.getTime() - 60_000);
      expect(rows).toHaveLength(options.catchupMax);
      expect(rows.filter((e) => e.trigger === 'catchup')).toHaveLength(
        misfire === 'run_all' ? 5 : misfire === 'run_once' ? 1 : 0,
      );
      expect(rows.at(-1)!.scheduledFor.getTime()).toBe(now.getTime() - 61_000);
      // Each late slot is a row or counted; the missed rows count too.
      expect(plan.advance.missed + rows.filter((e) => e.trigger === 'catchup').length).toBe(lateSlots);
      expect(plan.examined).toBeLessThan(1_000);
    }
  });

  it('run_once over a backlog longer than one pass: one catch-up, at most catchupMax missed rows', () => {
    const small = { ...options, maxSlotsPerPass: 10 };
    const now = new Date(T0 + 40 * 60_000);
    let current = task({ misfire: 'run_once', maxDelayMs: 60_000 });
    const rows = [];
    for (let i = 0; i < 6 && current.nextRunAt && current.nextRunAt.getTime() <= now.getTime(); i += 1) {
      const plan = planTaskSlots(current, everyMinute, now, small);
      rows.push(...plan.executions);
      current = { ...current, nextRunAt: plan.advance.nextRunAt };
    }
    expect(rows.filter((e) => e.trigger === 'catchup').map((e) => e.scheduledFor.getTime())).toEqual([
      T0 + 38 * 60_000,
    ]);
    expect(rows.filter((e) => e.status === 'missed').length).toBeLessThanOrEqual(options.catchupMax);
  });

  it('marks executions exclusive unless overlap is allow', () => {
    expect(planTaskSlots(task(), everySecond, new Date(T0), options).executions[0]!.exclusive).toBe(true);
    expect(planTaskSlots(task({ overlap: 'allow' }), everySecond, new Date(T0), options).executions[0]!.exclusive).toBe(
      false,
    );
  });
});
