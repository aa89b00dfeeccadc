import { CronExpressionParser } from 'cron-parser';
import { compileSchedule, slotsBetween } from '../libs/time/src/index.js';

const ZONES = [
  'UTC', 'Europe/Berlin', 'Europe/London', 'America/New_York', 'America/Los_Angeles', 'America/Sao_Paulo', 'America/Santiago',
  'Asia/Kolkata', 'Asia/Tokyo', 'Asia/Shanghai', 'Asia/Kathmandu', 'Australia/Sydney', 'Australia/Lord_Howe', 'Pacific/Auckland',
  'Pacific/Chatham', 'Africa/Cairo', 'Africa/Casablanca', 'America/Havana', 'Antarctica/Troll', 'Europe/Moscow',
];

/** 100 distinct expressions: minutely, hourly, daily, weekday, monthly shapes. */
function expressions(): string[] {
  const out: string[] = [];
  for (let i = 0; out.length < 100; i += 1) {
    const m = (i * 7) % 60;
    const h = (i * 5) % 24;
    const shapes = [`*/${(i % 10) + 5} * * * *`, `${m} * * * *`, `${m} ${h} * * *`, `${m} ${h} * * 1-5`, `${m} ${h} ${(i % 28) + 1} * *`];
    out.push(shapes[i % shapes.length]!);
  }
  return [...new Set(out)].slice(0, 100);
}

export interface ScheduleMathResult {
  tasks: number;
  slots: number;
  punctualUsPerSlot: number;
  cronParserUsPerSlot: number;
}

/**
 * µs per slot on a mix of 1,000 tasks over 100 expressions and 20 zones, a week of slots each
 * (the window holds the spring-forward night of 29 March 2026 in Europe):
 * Punctual's time library (DST rule, memoised) against raw cron-parser with the same zone.
 */
export function benchScheduleMath(opts: { quick: boolean }): ScheduleMathResult {
  const exprs = expressions();
  const tasks = Array.from({ length: opts.quick ? 200 : 1000 }, (_, i) => ({ cron: exprs[i % exprs.length]!, zone: ZONES[(i * 7) % ZONES.length]! }));
  const from = new Date('2026-03-28T00:00:00Z');
  // A week of slots per task: what a planner computes between restarts, compiled once.
  const to = new Date(from.getTime() + 7 * 86_400_000);
  let slots = 0;
  const t0 = performance.now();
  for (const task of tasks) slots += slotsBetween(compileSchedule({ kind: 'cron', cron: task.cron, timezone: task.zone }), from, to, 100_000).length;
  const punctual = performance.now() - t0;
  let theirs = 0;
  const sample = tasks.slice(0, opts.quick ? 20 : 100);
  const t1 = performance.now();
  for (const task of sample) {
    const it = CronExpressionParser.parse(task.cron, { tz: task.zone, currentDate: from, endDate: to });
    try {
      for (;;) {
        it.next();
        theirs += 1;
      }
    } catch {
      // end of the window
    }
  }
  const cronParser = performance.now() - t1;
  return { tasks: tasks.length, slots, punctualUsPerSlot: (punctual * 1000) / slots, cronParserUsPerSlot: (cronParser * 1000) / Math.max(1, theirs) };
}
