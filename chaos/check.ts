import type pg from 'pg';
import { EXECUTION_HISTORY } from '../libs/db/src/index.js';
import { scheduleSpecFromInput } from '../libs/tasks/src/index.js';
import { compileSchedule, slotsBetween } from '../libs/time/src/index.js';
import type { Invocation } from '../test/support/invocations.js';
import { wrongOverlapSkip } from '../test/support/overlap.js';

/** A fault the run injected, and when. */
export interface FaultEvent {
  kind: string;
  at: number;
}

/** What the check found, over every slot of every task. */
export interface ChaosVerdict {
  tasks: number;
  /** Slots due over the run, by every definition each task had. */
  expected: number;
  /** Slots next to a change of definition, where either definition may have it: not counted as lost if absent. */
  ambiguous: number;
  rows: number;
  /** Successful handler invocations (2xx answers of the webhook) of the slots up to the end. */
  runs: number;
  /**
   * Due slots with no row. The chaos cluster runs with a CATCHUP_MAX above any backlog it can make,
   * so every slot a misfire policy drops has a `missed` row: nothing is excused by a counter.
   */
  lost: string[];
  /** Executions of slots up to the end not in a terminal state after the run settled. */
  unfinished: string[];
  /** Executions recorded as succeeded more than once. */
  doubleSuccess: string[];
  /**
   * Executions whose handler ran once too often, counting every call of the webhook whatever it was
   * answered: more calls than attempts (each attempt calls at most once), two calls at the same time
   * (a second attempt while the first still ran), or a second success no crash explains.
   */
  duplicates: string[];
  /** Executions whose handler ran again after the worker running it died (at-least-once, expected). */
  rerunsAfterCrash: number;
  /**
   * `skipped(overlap)` executions the overlap policy had no business skipping (DESIGN §4): one that
   * had started (a retry is never judged by the policy), one of a task whose policy is `allow`, or
   * one with no other exclusive run of its task in progress at its own `scheduled_for` — a slot
   * that waited its turn behind a backlog and was skipped later is one of these.
   */
  wrongSkips: string[];
  /** Attempts that started, or webhook calls that arrived, before their execution's `fire_at`. */
  early: string[];
  /** Executions that ended `dead` although their handler never ran (no call at all): dead for want of a worker, or an attempt spent unrun. */
  deadUnrun: string[];
  byStatus: Record<string, number>;
  /** Worst start delay (first start − fire_at) of scheduled slots due within 10 s after each kind of fault. */
  worstStartDelayMs: Record<string, number>;
  /** Start delay (first start − fire_at) of every scheduled slot that ran: median and 99th percentile. */
  startDelayMs: { p50: number; p99: number };
  /** The tasks with the most scheduled slots that started over a second late: where the delays are. */
  lateStartsByTask: string[];
}

const TERMINAL = new Set(['succeeded', 'dead', 'skipped', 'missed', 'cancelled']);
const BOUNDARY_MS = 1_000;
const AFTER_FAULT_MS = 10_000;
const LATE_START_MS = 1_000;

interface AuditRow {
  target: string;
  action: string;
  at: Date;
  after: { schedule: Record<string, unknown>; status: string } | null;
}

/**
 * Accounts for every slot of every task against DESIGN §1: each due slot ends as exactly one
 * terminal state (or is counted as missed), succeeds at most once, and its handler — as the webhook
 * counted it — runs once unless a crash forced a second attempt. The slots a task should have had
 * are computed from its definitions over time (the audit log), as the time library plans them.
 */
export async function checkChaos(
  db: pg.Client,
  calls: Invocation[],
  faults: FaultEvent[],
  end: number,
): Promise<ChaosVerdict> {
  const { rows: tasks } = await db.query(`SELECT id, name, overlap, misfire, created_at FROM task`);
  const { rows: audit } = await db.query<AuditRow>(
    `SELECT target, action, at, after FROM audit_log WHERE action LIKE 'task.%' ORDER BY id`,
  );
  const { rows: executions } = await db.query(
    `SELECT e.id, e.task_id, e.scheduled_for, e.fire_at, e.trigger, e.status, e.skip_reason, e.started_at, e.finished_at, e.attempt, e.exclusive, e.error,
            h.first_start, h.starts, h.successes, h.lost_attempts
     FROM task_execution e CROSS JOIN LATERAL (
       SELECT min(ev.at) FILTER (WHERE ev.to_status = 'running') AS first_start,
              coalesce(array_agg(ev.at) FILTER (WHERE ev.to_status = 'running'), '{}') AS starts,
              (count(*) FILTER (WHERE ev.to_status = 'succeeded'))::int AS successes,
              (count(*) FILTER (WHERE ev.from_status = 'running'
                 AND (ev.to_status = 'running' OR ev.detail->>'reason' IN ('lease_expired', 'worker shut down mid-run'))))::int AS lost_attempts
       FROM (${EXECUTION_HISTORY}) ev
     ) h`,
  );
  const verdict: ChaosVerdict = {
    tasks: tasks.length,
    expected: 0,
    ambiguous: 0,
    rows: executions.length,
    runs: 0,
    lost: [],
    unfinished: [],
    doubleSuccess: [],
    duplicates: [],
    rerunsAfterCrash: 0,
    wrongSkips: [],
    early: [],
    deadUnrun: [],
    byStatus: {},
    worstStartDelayMs: {},
    startDelayMs: { p50: 0, p99: 0 },
    lateStartsByTask: [],
  };

  const byTask = new Map<string, typeof executions>();
  for (const e of executions) byTask.set(e.task_id, [...(byTask.get(e.task_id) ?? []), e]);
  for (const task of tasks) {
    const rows = byTask.get(task.id) ?? [];
    const { expected, boundaries } = expectedSlots(
      task,
      audit.filter((a) => a.target === task.name),
      end,
    );
    const seen = new Set(rows.map((r) => r.scheduled_for.getTime()));
    let absent = 0;
    for (const slot of expected) {
      if (seen.has(slot)) continue;
      if (boundaries.some((b) => Math.abs(slot - b) < BOUNDARY_MS)) verdict.ambiguous += 1;
      else absent += 1;
    }
    verdict.expected += expected.size;
    if (absent > 0) verdict.lost.push(`${task.name}: ${absent} slot(s)`);
    for (const skipped of rows.filter((r) => r.skip_reason === 'overlap')) {
      const why = wrongOverlapSkip(skipped, rows, task.overlap);
      if (!why) continue;
      // What ran around it, to tell why the claim found the task busy.
      const from = skipped.scheduled_for.getTime();
      const near = rows
        .filter((r) => Math.abs(r.scheduled_for.getTime() - from) <= 10_000)
        .map((r) => {
          const outcome = `${r.status}${r.skip_reason ? `(${r.skip_reason})` : ''}`;
          const ran = `${r.first_start?.toISOString().slice(11, 23) ?? '-'}→${r.finished_at?.toISOString().slice(11, 23) ?? '-'}`;
          return `${r.scheduled_for.toISOString().slice(11, 19)} ${r.trigger} ${outcome} ${ran}`;
        });
      verdict.wrongSkips.push(
        `${task.name} (overlap ${task.overlap}) @ ${skipped.scheduled_for.toISOString()}: ${why}; nearby: ${near.join('; ')}`,
      );
    }
  }

  const nameOf = new Map<string, string>(tasks.map((t) => [t.id, t.name]));
  const callsOf = new Map<string, Invocation[]>();
  for (const call of calls) callsOf.set(call.executionId, [...(callsOf.get(call.executionId) ?? []), call]);
  for (const e of executions) {
    const key = e.skip_reason ? `${e.status}:${e.skip_reason}` : e.status;
    verdict.byStatus[key] = (verdict.byStatus[key] ?? 0) + 1;
    // Slots after the end were planned while the run settled; they are not due yet.
    if (!TERMINAL.has(e.status) && e.scheduled_for.getTime() <= end)
      verdict.unfinished.push(
        `${nameOf.get(e.task_id) ?? e.task_id} ${e.id} ${e.status} (${e.scheduled_for.toISOString()})`,
      );
    if (e.successes > 1) verdict.doubleSuccess.push(e.id);
    // Slots after the end still run while the check reads: their rows and calls are not one moment's.
    if (e.scheduled_for.getTime() > end) continue;
    const mine = callsOf.get(e.id) ?? [];
    const runs = mine.filter((c) => c.status < 300).length;
    verdict.runs += runs;
    const slot = `${e.id} (${e.scheduled_for.toISOString()})`;
    if (mine.length > e.attempt) verdict.duplicates.push(`${slot}: ${mine.length} calls, ${e.attempt} attempt(s)`);
    const overlapping = mine.find((c, i) => i > 0 && (mine[i - 1]!.endedAt ?? Infinity) > c.at);
    if (overlapping)
      verdict.duplicates.push(
        `${slot}: a call at ${new Date(overlapping.at).toISOString()} while the previous one was still open`,
      );
    if (runs > 1) {
      // A worker killed after the webhook answered and before the run was recorded: the next
      // attempt calls again (at-least-once). Anything beyond that is a duplicate.
      if (runs - 1 <= e.lost_attempts) verdict.rerunsAfterCrash += runs - 1;
      else verdict.duplicates.push(`${slot}: ${runs} successful calls, ${e.lost_attempts} attempt(s) lost to a crash`);
    }
    if (e.status === 'dead' && mine.length === 0)
      verdict.deadUnrun.push(
        `${slot}: dead after ${e.attempt} attempt(s), its handler never called: ${String(e.error).slice(0, 200)}`,
      );
    const fireAt = e.fire_at.getTime();
    const earlyStart = (e.starts as Date[]).find((at) => at.getTime() < fireAt);
    if (earlyStart)
      verdict.early.push(`${slot}: an attempt started ${fireAt - earlyStart.getTime()} ms before its fire_at`);
    const earlyCall = mine.find((c) => c.at < fireAt);
    if (earlyCall) verdict.early.push(`${slot}: the webhook was called ${fireAt - earlyCall.at} ms before its fire_at`);
  }
  const delays = executions
    .filter((e) => e.trigger === 'schedule' && e.first_start)
    .map((e) => e.first_start.getTime() - e.fire_at.getTime())
    .sort((a, b) => a - b);
  const at = (q: number) => delays[Math.min(delays.length - 1, Math.floor(q * delays.length))] ?? 0;
  verdict.startDelayMs = { p50: at(0.5), p99: at(0.99) };
  const late = new Map<string, number[]>();
  for (const e of executions) {
    const delay = e.trigger === 'schedule' && e.first_start ? e.first_start.getTime() - e.fire_at.getTime() : 0;
    if (delay > LATE_START_MS) late.set(e.task_id, [...(late.get(e.task_id) ?? []), delay]);
  }
  verdict.lateStartsByTask = [...late]
    .sort(([, a], [, b]) => b.length - a.length)
    .slice(0, 5)
    .map(([id, delays]) => {
      const task = tasks.find((t) => t.id === id);
      return `${task?.name ?? id} (overlap ${task?.overlap}, misfire ${task?.misfire}): ${delays.length} slot(s), worst ${Math.max(...delays)} ms`;
    });
  for (const fault of faults) {
    const delays = executions
      .filter(
        (e) =>
          e.trigger === 'schedule' &&
          e.first_start &&
          e.fire_at.getTime() >= fault.at &&
          e.fire_at.getTime() < fault.at + AFTER_FAULT_MS,
      )
      .map((e) => e.first_start.getTime() - e.fire_at.getTime());
    if (delays.length)
      verdict.worstStartDelayMs[fault.kind] = Math.max(verdict.worstStartDelayMs[fault.kind] ?? 0, ...delays);
  }
  return verdict;
}

/**
 * The slots a task should have had up to `end`: each definition it had (create, every change, the
 * audit log's `after`) contributes its slots from the instant it took effect to the next change.
 * `boundaries` are those instants (a slot next to one may fall either way).
 */
function expectedSlots(
  task: { name: string; created_at: Date },
  audit: AuditRow[],
  end: number,
): { expected: Set<number>; boundaries: number[] } {
  const changes = audit.filter((a) => a.after).map((a) => ({ at: a.at.getTime(), schedule: a.after!.schedule }));
  const expected = new Set<number>();
  changes.forEach((change, i) => {
    const until = Math.min(changes[i + 1]?.at ?? end, end);
    if (until <= change.at) return;
    const { spec } = scheduleSpecFromInput(change.schedule as never, task.name, task.created_at);
    for (const slot of slotsBetween(compileSchedule(spec), new Date(change.at), new Date(until), 100_000))
      expected.add(slot.getTime());
  });
  return { expected, boundaries: changes.map((c) => c.at) };
}

/** One slot of a task's timeline, as the API lists it. */
interface TimelineSlot {
  scheduledFor: string;
  outcome: string;
  reason: string | null;
  executionId?: string;
  trigger: string | null;
}

/** The reasons an execution's row allows its slot's item to give, by the row (see the timeline's rules). */
function reasonsFor(row: {
  status: string;
  skip_reason: string | null;
  trigger: string;
  attempt: number;
}): (string | null)[] {
  const trigger = row.trigger === 'catchup' ? 'catch_up' : row.trigger === 'schedule' ? null : row.trigger;
  switch (row.status) {
    case 'succeeded':
    case 'running':
      return row.attempt > 1 ? ['retried'] : [trigger, 'flow_control', 'dst_gap'];
    case 'dead':
      return row.attempt > 1 ? ['retried'] : ['handler_error'];
    case 'retrying':
      return ['retried'];
    case 'scheduled':
    case 'queued':
      return [trigger, 'flow_control', 'no_worker', 'overlap', 'no_leader'];
    case 'skipped':
      return row.skip_reason === 'late'
        ? ['late', 'no_leader']
        : [
            { task_changed: 'edited', task_deleted: 'deleted', dst: 'dst_fold' }[row.skip_reason ?? ''] ??
              row.skip_reason,
          ];
    case 'missed':
      return ['catch_up', 'paused', 'no_leader', 'late'];
    case 'cancelled':
      return ['cancelled_by', 'deleted', 'paused', 'overlap'];
    default:
      return [];
  }
}

const OUTCOME_OF: Record<string, string[]> = {
  succeeded: ['succeeded'],
  dead: ['failed'],
  running: ['running'],
  retrying: ['pending'],
  scheduled: ['pending', 'upcoming'],
  queued: ['pending', 'upcoming'],
  skipped: ['skipped'],
  missed: ['missed'],
  cancelled: ['cancelled'],
};

/**
 * Every slot of every task has exactly one outcome on its timeline (DESIGN §7), read through the
 * API over `[from, end]`: a slot the task's definitions define with no item (zero outcomes) or two
 * items at one instant (two), an item nobody can explain (`unrecorded`), an execution's item whose
 * outcome or reason contradicts its row, or an execution missing from the timeline, is a problem.
 */
export async function checkTimelines(
  db: pg.Client,
  get: (path: string) => Promise<{ status: number; body: any }>,
  from: number,
  end: number,
): Promise<{ slots: number; problems: string[] }> {
  const { rows: tasks } = await db.query(`SELECT id, name, created_at FROM task`);
  const { rows: audit } = await db.query<AuditRow>(
    `SELECT target, action, at, after FROM audit_log WHERE action LIKE 'task.%' ORDER BY id`,
  );
  const { rows: executions } = await db.query(
    `SELECT id, task_id, scheduled_for, status, skip_reason, trigger, attempt FROM task_execution WHERE scheduled_for >= $1 AND scheduled_for <= $2`,
    [new Date(from), new Date(end)],
  );
  const problems: string[] = [];
  let slots = 0;
  for (const task of tasks) {
    const items: TimelineSlot[] = [];
    let cursor: string | null = null;
    do {
      const query: string = `from=${new Date(from).toISOString()}&to=${new Date(end).toISOString()}&limit=1000${cursor ? `&cursor=${cursor}` : ''}`;
      const res = await get(`/v1/tasks/${encodeURIComponent(task.name)}/timeline?${query}`);
      if (res.status !== 200) {
        problems.push(`${task.name}: the timeline answered ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
        break;
      }
      items.push(...(res.body.items as TimelineSlot[]));
      cursor = res.body.nextCursor;
    } while (cursor);
    slots += items.length;
    const at = new Map<number, TimelineSlot>();
    for (const item of items) {
      const t = Date.parse(item.scheduledFor);
      if (at.has(t))
        problems.push(`${task.name} @ ${item.scheduledFor}: two outcomes (${at.get(t)!.outcome}, ${item.outcome})`);
      at.set(t, item);
      if (item.reason === 'unrecorded')
        problems.push(`${task.name} @ ${item.scheduledFor}: no outcome recorded (unrecorded)`);
    }
    const { expected, boundaries } = expectedSlots(
      task,
      audit.filter((a) => a.target === task.name),
      end,
    );
    for (const slot of expected) {
      if (slot < from || at.has(slot) || boundaries.some((b) => Math.abs(slot - b) < BOUNDARY_MS)) continue;
      problems.push(
        `${task.name} @ ${new Date(slot).toISOString()}: a slot of its schedule with no outcome on its timeline`,
      );
    }
    for (const row of executions.filter((e) => e.task_id === task.id)) {
      const item = at.get(row.scheduled_for.getTime());
      const where = `${task.name} @ ${row.scheduled_for.toISOString()} (${row.status}${row.skip_reason ? `:${row.skip_reason}` : ''}, ${row.trigger}, attempt ${row.attempt})`;
      if (!item) problems.push(`${where}: an execution missing from the timeline`);
      else if (item.executionId !== row.id)
        problems.push(`${where}: the timeline shows ${item.executionId ?? 'no execution'} at its slot`);
      else if (!(OUTCOME_OF[row.status] ?? []).includes(item.outcome))
        problems.push(`${where}: outcome ${item.outcome} contradicts the row`);
      else if (!reasonsFor(row).includes(item.reason))
        problems.push(`${where}: reason ${item.reason} contradicts the row`);
    }
  }
  return { slots, problems };
}
