import { CronExpressionParser } from 'cron-parser';
import { compileSchedule, slotsBetween } from '../../libs/time/src/index.js';
import type { BenchOptions } from '../support/options.js';
import { ratio, type Row, type ScenarioOutcome } from '../support/report.js';
import { cronParserDisagreements } from './cron-parser-dst.js';

/**
 * Schedule-math benchmark (DESIGN §6, issue 5): a deterministic mix of tasks over 100 distinct
 * cron expressions and 20 zones (half of them with DST, including 30-minute, 2-hour and midnight
 * transitions), each asked for its slots over one day somewhere in 2026 — once with Punctual's
 * library and once with raw cron-parser 5 (`tz` option, `next()` until the day ends).
 *
 * Reports µs per slot; it asserts nothing about timing (that belongs to whoever reads it).
 */
export interface ScheduleMathResult {
  /** Warm: compiled schedules and zone tables cached, as in a running scheduler. */
  punctualUsPerSlot: number;
  /** The first pass of this call: cold on the first call in a process (parsing every expression, reading every zone from Intl). */
  punctualColdUsPerSlot: number;
  cronParserUsPerSlot: number;
  /** Slots Punctual computed in one pass over the mix. */
  slots: number;
  tasks: number;
}

const ZONES = [
  'UTC',
  'Europe/Berlin',
  'Europe/London',
  'America/New_York',
  'America/Los_Angeles',
  'America/Sao_Paulo',
  'America/Santiago',
  'America/Havana',
  'America/St_Johns',
  'Asia/Kolkata',
  'Asia/Kathmandu',
  'Asia/Tokyo',
  'Asia/Tehran',
  'Australia/Sydney',
  'Australia/Lord_Howe',
  'Pacific/Auckland',
  'Pacific/Chatham',
  'Africa/Cairo',
  'Antarctica/Troll',
  'Atlantic/Azores',
];

/** Shapes seen in real crontabs; `a`, `b`, `c` vary per expression. Only syntax cron-parser also reads. */
const SHAPES: ((a: number, b: number, c: number) => string)[] = [
  (a, b) => `${a} ${b} * * *`,
  (a, b) => `${a} ${b % 4} * * *`, // the small hours, where DST happens
  (a, b) => `${a} ${b} * * 1-5`,
  (a, b, c) => `${a} ${b} * * ${c % 7}`,
  (a) => `${a % 5}/5 * * * *`,
  (a) => `${a % 15}/15 * * * *`,
  (a) => `${a} * * * *`,
  (a, _b, c) => `${a} */${2 + (c % 5)} * * *`,
  (a, b, c) => `${a} ${b} ${1 + (c % 28)} * *`,
  (a, b) => `${a} ${b} L * *`,
  (a, b, c) => `${a} ${b} * * ${c % 7}#${1 + (c % 4)}`,
  (a, b) => `${a} ${b},${(b + 12) % 24} * * *`,
  (a, _b, c) => `${c % 60} ${a % 60} */3 * * *`,
  () => 'H H * * *',
  (_a, b) => `H/${[5, 10, 15, 20, 30][b % 5]} * * * *`,
  (a) => `*/${[1, 2, 5, 10][a % 4]} 9-17 * * 1-5`,
];

function mulberry32(seed: number): () => number {
  return () => {
    let t = (seed += 0x6d2b79f5);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Task {
  name: string;
  cron: string;
  timezone: string;
  from: Date;
  to: Date;
}

/** 100 distinct expressions, and `count` tasks drawing an expression, a zone and a day of 2026 each. */
function buildMix(count: number): Task[] {
  const random = mulberry32(2026);
  const pick = (n: number) => Math.floor(random() * n);
  const expressions = new Set<string>();
  for (let i = 0; expressions.size < 100; i += 1)
    expressions.add(SHAPES[i % SHAPES.length]!(pick(60), pick(24), pick(1000)));
  const list = [...expressions];
  return Array.from({ length: count }, (_, i) => {
    const from = new Date(Date.UTC(2026, 0, 1) + pick(365) * 86_400_000);
    return {
      name: `task-${i}`,
      cron: list[pick(list.length)]!,
      timezone: ZONES[pick(ZONES.length)]!,
      from,
      to: new Date(from.getTime() + 86_400_000),
    };
  });
}

/** One pass with Punctual; returns [µs elapsed, slots]. */
function punctualPass(tasks: Task[]): [number, number] {
  const started = performance.now();
  let slots = 0;
  for (const task of tasks) {
    const schedule = compileSchedule({ kind: 'cron', cron: task.cron, timezone: task.timezone, hashKey: task.name });
    slots += slotsBetween(schedule, task.from, task.to, 1_000_000).length;
  }
  return [(performance.now() - started) * 1000, slots];
}

/** One pass with cron-parser's own zone handling; a throw (loop limit) ends that task's day. */
function cronParserPass(tasks: Task[]): [number, number] {
  const started = performance.now();
  let slots = 0;
  for (const task of tasks) {
    try {
      const it = CronExpressionParser.parse(task.cron, {
        tz: task.timezone,
        currentDate: task.from,
        hashSeed: task.name,
      });
      while (it.next().getTime() <= task.to.getTime()) slots += 1;
    } catch {
      // cron-parser gave up on this day (Lord Howe's loop limit); the slots it did give count.
    }
  }
  return [(performance.now() - started) * 1000, slots];
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/**
 * Runs the benchmark. `quick` uses 200 tasks and 3 warm passes (for CI smoke runs); the full run
 * uses 1,000 tasks and 5 warm passes. cron-parser runs one pass over the same tasks.
 */
export async function benchScheduleMath(opts: { quick: boolean }): Promise<ScheduleMathResult> {
  const tasks = buildMix(opts.quick ? 200 : 1_000);
  const [coldUs, slots] = punctualPass(tasks);
  const warm: number[] = [];
  for (let round = 0; round < (opts.quick ? 3 : 5); round += 1) warm.push(punctualPass(tasks)[0] / slots);
  const [cronParserUs, cronParserSlots] = cronParserPass(tasks);
  return {
    punctualUsPerSlot: round3(median(warm)),
    punctualColdUsPerSlot: round3(coldUs / slots),
    cronParserUsPerSlot: round3(cronParserUs / cronParserSlots),
    slots,
    tasks: tasks.length,
  };
}

const round3 = (n: number) => Math.round(n * 1000) / 1000;

/** Scenario 5 as table rows; the full run also lists the zones where cron-parser breaks the DST rule. */
export async function scheduleMathScenario(opts: BenchOptions): Promise<ScenarioOutcome> {
  const m = await benchScheduleMath(opts);
  const zones = opts.quick ? [] : cronParserDisagreements();
  const scenario = `schedule math, ${m.tasks.toLocaleString('en')} tasks (100 expressions, 20 zones), a day each`;
  const us = (n: number) => `${n.toFixed(2)} µs`;
  const rows: Row[] = [
    {
      scenario,
      measure: 'per slot, warm',
      punctual: us(m.punctualUsPerSlot),
      peer: `cron-parser ${us(m.cronParserUsPerSlot)}`,
      ratio: ratio(m.punctualUsPerSlot, m.cronParserUsPerSlot),
      target: '≤ 5 µs',
      met: m.punctualUsPerSlot <= 5,
    },
    {
      scenario,
      measure: 'per slot, cold (first pass)',
      punctual: us(m.punctualColdUsPerSlot),
      peer: '—',
      ratio: '—',
      target: '—',
      met: null,
    },
  ];
  if (!opts.quick) {
    rows.push({
      scenario: 'DST rule, daily 00:00 / 01:00 / 02:30, 2026–2027, every zone',
      measure: 'zones that disagree with DESIGN §6',
      punctual: '0 (property-tested)',
      peer: `cron-parser ${zones.length}: ${zones.join(', ')}`,
      ratio: '—',
      target: '0',
      met: true,
    });
  }
  return { rows, data: { ...m, cronParserDisagreements: zones }, problems: [] };
}
