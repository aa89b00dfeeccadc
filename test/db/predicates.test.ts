import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Random } from '../../chaos/random.js';
import { EXECUTION_STATUSES, TRIGGERS } from '../../libs/contract/src/index.js';
import {
  attemptsRemainSql,
  canBeLateSql,
  earlierSlotDueSql,
  lateSql,
  plannedSql,
  runInProgressSql,
  taskFreeSql,
} from '../../libs/db/src/executions/predicates.js';
import {
  attemptsRemain,
  canBeLate,
  earlierSlotDue,
  isLate,
  isPlanned,
  type TaskSlotRow,
  taskIsFree,
  runsAhead,
} from '../../libs/planning/src/index.js';
import { createSandbox, type Sandbox } from '../support/isolation.js';
import { insertTasks } from '../support/tasks.js';

const SEED = 20261128;
/** Generated worlds of one task's executions for the questions that read other rows. */
const WORLDS = 300;

/**
 * Each SQL fragment of the claim and leader paths (libs/db/src/executions/predicates.ts) against its
 * TypeScript twin in @punctual/planning, on generated cases: both must answer alike on every one.
 * A fragment and its twin that drift apart — a `<` for a `<=`, a status left out — fail here with the
 * case that tells them apart.
 */
describe('the SQL predicates and their TypeScript twins', () => {
  let sandbox: Sandbox;
  let db: pg.Client;

  beforeAll(async () => {
    sandbox = await createSandbox();
    db = new pg.Client({ connectionString: sandbox.databaseUrl });
    await db.connect();
  });
  afterAll(async () => {
    await db?.end();
    await sandbox?.dispose();
  });

  it('planned: every execution status', async () => {
    const { rows } = await db.query(
      `SELECT e.status, ${plannedSql('e')} AS planned FROM unnest($1::execution_status[]) AS e(status)`,
      [EXECUTION_STATUSES],
    );
    expect(rows).toHaveLength(EXECUTION_STATUSES.length);
    for (const r of rows)
      expect({ status: r.status, planned: r.planned }).toEqual({ status: r.status, planned: isPlanned(r.status) });
    expect(
      rows
        .filter((r) => r.planned)
        .map((r) => r.status)
        .sort(),
    ).toEqual(['queued', 'scheduled']);
  });

  it('late: fire_at, maxDelay and the clock, the boundary to the millisecond included', async () => {
    const random = new Random(SEED);
    const now = Date.parse('2026-11-28T12:00:00.000Z');
    const cases = Array.from({ length: 500 }, (_, i) => {
      const maxDelayMs = random.pick([0, 1, 999, 1_000, 60_000, 3_600_000]);
      // Around the boundary (fire_at + maxDelay = now, ± a millisecond or two) and anywhere.
      const offset = i % 2 === 0 ? maxDelayMs + random.int(-2, 2) : random.int(-7_200_000, 7_200_000);
      return { fireAt: new Date(now - offset), maxDelayMs };
    });
    const { rows } = await db.query(
      `SELECT ${lateSql('e', 't', '$3::timestamptz')} AS late
       FROM unnest($1::timestamptz[], $2::int[]) WITH ORDINALITY AS c(fire_at, max_delay_ms, n)
       CROSS JOIN LATERAL (SELECT c.fire_at) e CROSS JOIN LATERAL (SELECT c.max_delay_ms) t ORDER BY c.n`,
      [cases.map((c) => c.fireAt.toISOString()), cases.map((c) => c.maxDelayMs), new Date(now).toISOString()],
    );
    const disagree = cases.filter((c, i) => rows[i].late !== isLate(c.fireAt, c.maxDelayMs, new Date(now)));
    expect(disagree).toEqual([]);
    // Both answers occur, and the exact boundary is among the cases.
    expect(new Set(rows.map((r) => r.late))).toEqual(new Set([true, false]));
    expect(cases.some((c) => now - c.fireAt.getTime() === c.maxDelayMs)).toBe(true);
  });

  it('can be late: every trigger and the first attempts', async () => {
    const cases = TRIGGERS.flatMap((trigger) => [0, 1, 2].map((attempt) => ({ trigger, attempt })));
    const { rows } = await db.query(
      `SELECT ${canBeLateSql('e')} AS can FROM unnest($1::execution_trigger[], $2::int[]) WITH ORDINALITY AS e(trigger, attempt, n) ORDER BY e.n`,
      [cases.map((c) => c.trigger), cases.map((c) => c.attempt)],
    );
    expect(cases.filter((c, i) => rows[i].can !== canBeLate(c))).toEqual([]);
    expect(rows.filter((r) => r.can)).toHaveLength(1);
  });

  it('attempts remain: every attempt against every limit up to five', async () => {
    const cases = [0, 1, 2, 3, 4, 5, 6].flatMap((attempt) => [1, 2, 3, 4, 5].map((max) => ({ attempt, max })));
    const { rows } = await db.query(
      `SELECT ${attemptsRemainSql('c.attempt', 'c.max')} AS remain FROM unnest($1::int[], $2::int[]) WITH ORDINALITY AS c(attempt, max, n) ORDER BY c.n`,
      [cases.map((c) => c.attempt), cases.map((c) => c.max)],
    );
    expect(cases.filter((c, i) => rows[i].remain !== attemptsRemain(c.attempt, c.max))).toEqual([]);
  });

  it(`a run in progress, an earlier slot due and the task free: ${WORLDS} generated worlds of one task's executions (seed ${SEED})`, async () => {
    const random = new Random(SEED);
    const [taskId] = await insertTasks(db, 1, { prefix: 'twins', nextRunAt: new Date(Date.now() + 3_600_000) });
    const answers = { free: 0, busy: 0 };
    for (let world = 0; world < WORLDS; world += 1) {
      await db.query('DELETE FROM task_execution WHERE task_id = $1', [taskId]);
      const { rows: clock } = await db.query(`SELECT now() AS now`);
      const now: Date = clock[0].now;
      const rows: TaskSlotRow[] = [];
      let runningExclusive = false;
      const count = random.int(1, 5);
      for (let i = 0; i < count; i += 1) {
        let status = random.pick(EXECUTION_STATUSES);
        const exclusive = random.next() < 0.8;
        // The schema's guard: one exclusive run of a task running at a time.
        if (status === 'running' && exclusive && runningExclusive) status = 'retrying';
        if (status === 'running' && exclusive) runningExclusive = true;
        // Distinct slots a second apart around now; fire_at at, before or after the clock (the boundary included).
        const scheduledFor = new Date(now.getTime() + (random.int(-5, 5) * 10 + i) * 1_000);
        const fireAt = new Date(
          random.pick([now.getTime(), scheduledFor.getTime(), now.getTime() + random.pick([-1, 1]) * 5_000]),
        );
        const row = { id: randomUUID(), status, exclusive, fireAt, scheduledFor };
        rows.push(row);
        await db.query(
          `INSERT INTO task_execution (id, task_id, task_name, scheduled_for, fire_at, trigger, status, attempt, task_version, exclusive)
           VALUES ($1, $2, 'twins-0', $3, $4, 'schedule', $5, $6, 1, $7)`,
          [row.id, taskId, scheduledFor, fireAt, status, isPlanned(status) ? 0 : 1, exclusive],
        );
      }
      const { rows: sql } = await db.query(
        `SELECT e.id, ${runInProgressSql('e', 'running')} AS running, ${runInProgressSql('e', 'retrying')} AS retrying,
                ${earlierSlotDueSql('e', '$2::timestamptz')} AS earlier, (${taskFreeSql('e', '$2::timestamptz')}) AS free
         FROM task_execution e WHERE e.task_id = $1`,
        [taskId, now],
      );
      for (const s of sql) {
        const slot = rows.find((r) => r.id === s.id)!;
        const runsInProgress = runsAhead(slot, rows);
        const earlierDue = earlierSlotDue(slot, rows, now);
        const twin = {
          running: runsInProgress.some((h) => h.status === 'running'),
          retrying: runsInProgress.some((h) => h.status === 'retrying'),
          earlier: earlierDue,
          free: taskIsFree({ runsInProgress, earlierDue }),
        };
        expect({ world, slot: slot.id, ...twin }).toEqual({
          world,
          slot: slot.id,
          running: s.running,
          retrying: s.retrying,
          earlier: s.earlier,
          free: s.free,
        });
        answers[s.free ? 'free' : 'busy'] += 1;
      }
    }
    // Not vacuous: both answers, many times.
    expect(answers.free).toBeGreaterThan(WORLDS / 4);
    expect(answers.busy).toBeGreaterThan(WORLDS / 4);
  });
});
