import type { MISFIRE_POLICIES } from '@punctual/contract';

/**
 * A planned slot whose first attempt can no longer start within its task's `maxDelay` (`late`),
 * or a catch-up run of a `run_once`/`run_all` task that has not started either (`catchup`).
 */
export interface LateSlot {
  id: string;
  taskId: string;
  scheduledFor: Date;
  kind: 'late' | 'catchup';
  misfire: (typeof MISFIRE_POLICIES)[number];
  /** The task's cursor is late too: the planner will record later late slots of the task. */
  cursorLate: boolean;
}

export interface LateDecision {
  /** Rows that run now as catch-up runs, `fireAt` one millisecond apart in slot order. */
  catchup: { id: string; fireAt: Date }[];
  /** Rows that end `missed`. */
  missed: string[];
}

/**
 * The misfire policy for slots already planned when they became late — planned before an outage of
 * the leader or of every worker, found by the next leader, or waiting for workers that are down.
 * They get the same choice as the late slots the planner meets at the cursor, and share it with
 * them and with the task's catch-up runs that have not started yet:
 * - `skip`: all missed;
 * - `run_once`: the most recent runs, unless the task's cursor is late too (then a more recent late
 *   slot is still to be planned, and the planner runs that one): the rest — an older catch-up that
 *   never started included — missed;
 * - `run_all`: the most recent `catchupMax` run, the rest missed.
 * A row kept that already is a catch-up is left as it is.
 *
 * `rows` are ordered by task, then slot.
 */
export function resolveLateSlots(rows: LateSlot[], now: Date, catchupMax: number): LateDecision {
  const decision: LateDecision = { catchup: [], missed: [] };
  let offset = 0;
  for (let start = 0; start < rows.length;) {
    let end = start;
    while (end < rows.length && rows[end]!.taskId === rows[start]!.taskId) end += 1;
    const ofTask = rows.slice(start, end);
    const { misfire, cursorLate } = ofTask[0]!;
    const runs = misfire === 'run_all' ? catchupMax : misfire === 'run_once' && !cursorLate ? 1 : 0;
    const firstRun = Math.max(0, ofTask.length - runs);
    ofTask.forEach((row, index) => {
      if (index < firstRun) decision.missed.push(row.id);
      else if (row.kind === 'late') decision.catchup.push({ id: row.id, fireAt: new Date(now.getTime() + offset++) });
    });
    start = end;
  }
  return decision;
}
