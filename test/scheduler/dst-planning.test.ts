import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PlannerService } from '../../libs/scheduler/src/index.js';
import { Metrics } from '../../libs/metrics/src/index.js';
import { createSandbox, type Sandbox } from '../support/isolation.js';
import { openRepositories } from '../support/repositories.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/** Every `stepMs` from `from` (inclusive) to `to` (exclusive), as ISO strings: an elapsed-time schedule. */
const every = (from: string, to: string, stepMs: number) => {
  const out: string[] = [];
  for (let t = Date.parse(from); t < Date.parse(to); t += stepMs) out.push(new Date(t).toISOString());
  return out;
};

interface Window {
  zone: string;
  from: string;
  to: string;
  /** cron → the slots the DST rule of DESIGN §6 gives in [from, to), worked out by hand. */
  expected: Record<string, string[]>;
}

/**
 * DESIGN §6 through the running planner: `PlannerService.planDueSlots` ticking with an injected
 * clock every five minutes across a spring-forward and a fall-back day — Europe/Berlin (one hour
 * at 01:00 UTC), Australia/Lord_Howe (half an hour) and America/Santiago (at local midnight) —
 * writes exactly the slots the rule says, each once. A fixed-time expression shifts through a gap
 * and fires once in a repeated hour; a wildcard-hour expression follows elapsed time (every real
 * hour, every real quarter hour).
 */
const WINDOWS: Window[] = [
  {
    // 2026-03-29 02:00 CET → 03:00 CEST: 02:30 does not exist that day and moves to 03:30 CEST.
    zone: 'Europe/Berlin',
    from: '2026-03-28T00:00:00.000Z',
    to: '2026-03-30T00:00:00.000Z',
    expected: {
      '30 2 * * *': ['2026-03-28T01:30:00.000Z', '2026-03-29T01:30:00.000Z'],
      '0 * * * *': every('2026-03-28T00:00:00.000Z', '2026-03-30T00:00:00.000Z', HOUR),
      '*/15 * * * *': every('2026-03-28T00:00:00.000Z', '2026-03-30T00:00:00.000Z', 15 * MINUTE),
    },
  },
  {
    // 2026-04-05 02:00 LHDT (+11) → 01:30 LHST (+10:30): 01:45 happens twice, the first one fires.
    zone: 'Australia/Lord_Howe',
    from: '2026-04-03T12:00:00.000Z',
    to: '2026-04-05T12:00:00.000Z',
    expected: {
      '45 1 * * *': ['2026-04-03T14:45:00.000Z', '2026-04-04T14:45:00.000Z'],
      '*/15 * * * *': every('2026-04-03T12:00:00.000Z', '2026-04-05T12:00:00.000Z', 15 * MINUTE),
    },
  },
  {
    // 2026-04-05 00:00 (-03) → 2026-04-04 23:00 (-04): 23:30 on the 4th happens twice; midnight of the 5th once, at -04.
    zone: 'America/Santiago',
    from: '2026-04-04T00:00:00.000Z',
    to: '2026-04-06T00:00:00.000Z',
    expected: {
      '0 0 * * *': ['2026-04-04T03:00:00.000Z', '2026-04-05T04:00:00.000Z'],
      '30 23 * * *': ['2026-04-05T02:30:00.000Z'],
    },
  },
  {
    // 2026-09-06 00:00 (-04) → 01:00 (-03): midnight does not exist that day and moves to 01:00.
    zone: 'America/Santiago',
    from: '2026-09-05T00:00:00.000Z',
    to: '2026-09-08T00:00:00.000Z',
    expected: {
      '0 0 * * *': ['2026-09-05T04:00:00.000Z', '2026-09-06T04:00:00.000Z', '2026-09-07T03:00:00.000Z'],
    },
  },
  {
    // 2026-10-04 02:00 LHST (+10:30) → 02:30 LHDT (+11): 02:15 does not exist and moves on by the gap, to 02:45.
    zone: 'Australia/Lord_Howe',
    from: '2026-10-02T12:00:00.000Z',
    to: '2026-10-04T12:00:00.000Z',
    expected: {
      '15 2 * * *': ['2026-10-02T15:45:00.000Z', '2026-10-03T15:45:00.000Z'],
      '*/15 * * * *': every('2026-10-02T12:00:00.000Z', '2026-10-04T12:00:00.000Z', 15 * MINUTE),
    },
  },
  {
    // 2026-10-25 03:00 CEST → 02:00 CET: 02:30 happens twice, the first one (CEST) fires; every real hour does.
    zone: 'Europe/Berlin',
    from: '2026-10-24T00:00:00.000Z',
    to: '2026-10-26T00:00:00.000Z',
    expected: {
      '30 2 * * *': ['2026-10-24T00:30:00.000Z', '2026-10-25T00:30:00.000Z'],
      '0 * * * *': every('2026-10-24T00:00:00.000Z', '2026-10-26T00:00:00.000Z', HOUR),
      '*/15 * * * *': every('2026-10-24T00:00:00.000Z', '2026-10-26T00:00:00.000Z', 15 * MINUTE),
    },
  },
];

describe('the running planner across DST transitions (injected clock)', () => {
  let sandbox: Sandbox;
  let db: Awaited<ReturnType<typeof openRepositories>>;
  let planner: PlannerService;
  let epoch: bigint;

  beforeAll(async () => {
    sandbox = await createSandbox();
    const config = sandbox.config();
    db = await openRepositories(config);
    planner = new PlannerService(config, db.prisma, db.cursors, db.executions, db.state, new Metrics(), db.room);
    epoch = await db.state.bumpEpoch('dst-planning');
  });
  afterAll(async () => {
    await db?.close();
    await sandbox?.dispose();
  });

  it.each(WINDOWS.map((w, i) => [`${w.zone} ${w.from.slice(0, 10)}`, i] as const))(
    '%s: every slot the rule gives, once',
    async (_, index) => {
      const window = WINDOWS[index]!;
      const names = new Map<string, string>();
      for (const [i, [cron, slots]] of Object.entries(window.expected).entries()) {
        const name = `dst-${index}-${i}`;
        names.set(name, cron);
        // The cursor on the task's first slot of the window, as the planner would have left it.
        await db.prisma.task.create({
          data: {
            name,
            handler: 'noop',
            scheduleKind: 'cron',
            cron,
            timezone: window.zone,
            secret: 's',
            nextRunAt: new Date(slots[0]!),
          },
        });
      }
      for (let now = Date.parse(window.from); now <= Date.parse(window.to); now += 5 * MINUTE)
        await planner.planDueSlots(epoch, () => new Date(now));
      for (const [name, cron] of names) {
        const rows = await db.prisma.taskExecution.findMany({
          where: { taskName: name, scheduledFor: { lt: new Date(window.to) } },
          orderBy: { scheduledFor: 'asc' },
        });
        expect(
          rows.map((r) => r.scheduledFor.toISOString()),
          `${cron} in ${window.zone}`,
        ).toEqual(window.expected[cron]);
        expect(rows.every((r) => r.status === 'scheduled')).toBe(true);
      }
      await db.prisma.task.updateMany({ where: { name: { in: [...names.keys()] } }, data: { status: 'paused' } });
    },
  );
});
