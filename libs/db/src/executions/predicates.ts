import { PLANNED_EXECUTION_STATUSES } from '@punctual/contract';

/**
 * The rules of the claim and leader paths, in SQL, each written once. Every statement that asks one
 * of these questions of a row builds its text from here, and each fragment has a twin in
 * `@punctual/planning` that decides the same question in TypeScript (the claim's judgement, the
 * planner, the failure judgement); test/db/predicates.test.ts holds each pair to the same answers
 * on generated rows, as test/db/shards.test.ts does for the shard hash.
 *
 * Each takes the aliases of the rows it reads (`e` an execution, `t` its task) and the SQL of the
 * instant it judges at (`now()`, or `statement_timestamp()` inside a longer transaction), and
 * returns SQL text — the same text for the same arguments, so a statement prepared once stays one.
 */

/**
 * The statuses of a row planned and not begun — planned (`scheduled`) or handed to the queue
 * (`queued`) — as an SQL list, from the contract's own list. Twin: `isPlanned`.
 */
export const PLANNED_STATUSES = `(${PLANNED_EXECUTION_STATUSES.map((s) => `'${s}'`).join(', ')})`;

/** `e` is planned or queued, its first attempt not begun. Twin: `isPlanned(status)`. */
export function plannedSql(e: string): string {
  return `${e}.status IN ${PLANNED_STATUSES}`;
}

/**
 * `e` can no longer start within its task's `maxDelay` of its `fire_at`, by the clock `now`.
 * Twin: `isLate(fireAt, maxDelayMs, now)` — the one late rule.
 */
export function lateSql(e: string, t: string, now: string): string {
  return `${e}.fire_at < ${now} - ${t}.max_delay_ms * interval '1 millisecond'`;
}

/** Lateness applies to `e` at all: the first attempt of a scheduled slot. Twin: `canBeLate`. */
export function canBeLateSql(e: string): string {
  return `(${e}.trigger = 'schedule' AND ${e}.attempt = 0)`;
}

/** An execution that spent `attempt` attempts may have another under `maxAttempts`. Twin: `attemptsRemain`. */
export function attemptsRemainSql(attempt: string, maxAttempts: string): string {
  return `${attempt} < ${maxAttempts}`;
}

/**
 * Another exclusive run of `e`'s task is in progress in `status` — `running`, or `retrying` (a slot
 * between attempts still holds its task). Two questions, not one `IN`, so each is one probe of the
 * partial indexes on exclusive running and retrying rows. `h` names the row found; `lock`, a
 * locking clause on it (a write that relies on the run being in progress).
 */
export function runInProgressSql(e: string, status: 'running' | 'retrying', h = 'h', lock = ''): string {
  return `EXISTS (SELECT 1 FROM live_execution ${h} WHERE ${h}.task_id = ${e}.task_id AND ${h}.status = '${status}' AND ${h}.exclusive AND ${h}.id <> ${e}.id${lock && ` ${lock}`})`;
}

/** An earlier exclusive slot of `e`'s task is due (its `fire_at` has come by `now`) and not begun. Twin: the claim read's `earlierDue`. */
export function earlierSlotDueSql(e: string, now: string, o = 'o'): string {
  return `EXISTS (
          SELECT 1 FROM live_execution ${o} WHERE ${o}.task_id = ${e}.task_id AND ${plannedSql(o)} AND ${o}.exclusive
            AND ${o}.fire_at <= ${now} AND ${o}.scheduled_for < ${e}.scheduled_for)`;
}

/**
 * `e`'s task is free for `e` to start by the clock `now`: no other exclusive run of it running or
 * retrying, and no earlier exclusive slot of it due. Twin: `taskIsFree` — what the judgement
 * decides for a newcomer with no runsInProgress and nothing earlier due.
 */
export function taskFreeSql(e: string, now: string): string {
  return `NOT ${runInProgressSql(e, 'running')}
        AND NOT ${runInProgressSql(e, 'retrying')}
        AND NOT ${earlierSlotDueSql(e, now)}`;
}

/**
 * The handler the execution row `alias` runs, as SQL: the one its pinned definition names (an edit
 * pinned a run in progress), else its task's — the handler whose queue its jobs go to.
 */
export const HANDLER_OF_ROW = (alias: string) =>
  `COALESCE(${alias}.pinned_definition->>'handler', (SELECT t.handler FROM task t WHERE t.id = ${alias}.task_id))`;
