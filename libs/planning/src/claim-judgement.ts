import type { EXECUTION_STATUSES, OVERLAP_POLICIES, SKIP_REASONS, TASK_STATUSES, TRIGGERS } from '@punctual/contract';
import { canBeLate, isLate } from './lateness.js';
import { attemptsRemain, isPlanned, taskIsFree } from './policy.js';

/** The execution a worker asks to start an attempt of, as the claim's read found it. */
export interface ClaimSlot {
  status: (typeof EXECUTION_STATUSES)[number];
  /** Attempts started so far: 0 when the first one is asked for. */
  attempt: number;
  trigger: (typeof TRIGGERS)[number];
  scheduledFor: Date;
  fireAt: Date;
  /** Its overlap policy is not `allow`: it runs alone. */
  exclusive: boolean;
  /** The plan version it was planned (or re-planned) under. */
  taskVersion: number;
  /** An edit pinned the definition it started with on it. */
  pinned: boolean;
  /** When a running attempt's lease ends. */
  leaseUntil: Date | null;
  /** `retrying`: when its next attempt is due. A pending slot: set while it is the one buffered (`buffer_one`). */
  nextAttemptAt: Date | null;
  /** Since when flow control holds it back (its key at its limit); null when it is not held. */
  heldAt: Date | null;
}

/** What the judgement reads of the slot's task. */
export interface ClaimTask {
  status: (typeof TASK_STATUSES)[number];
  planVersion: number;
  overlap: (typeof OVERLAP_POLICIES)[number];
  maxDelayMs: number;
  maxAttempts: number;
}

/** Another exclusive execution of the task in progress: running, or between two attempts (`retrying`). */
export interface RunInProgress {
  id: string;
  fireAt: Date;
  /** When its first attempt started. */
  firstStartedAt: Date;
  /** When it was released to the queue; null when unknown (taken as its first start). */
  releasedAt: Date | null;
  running: boolean;
}

/** Everything a claim is judged by, read in one snapshot. */
export interface ClaimContext {
  slot: ClaimSlot;
  /** Null when the task was deleted. */
  task: ClaimTask | null;
  /** The task's other exclusive executions in progress (none when the slot is not exclusive). */
  runsInProgress: RunInProgress[];
  /** An earlier slot of the task is due (its `fire_at` has passed) and has not started: it goes first. */
  earlierDue: boolean;
  /** Another slot of the task is already the one waiting behind the run in progress (`buffer_one`). */
  otherBuffered: boolean;
  /** The task's scheduled slot before this one (null: none known): a run lasting longer than the gap is a slow task's own overlap. */
  previousSlotAt: Date | null;
}

/**
 * - `run`: start the attempt.
 * - `lost`: nothing to start: the execution ended, another worker owns it, or its attempts are spent.
 * - `early`: its `fire_at` (a retry: its `next_attempt_at`) has not come; ask again then.
 * - `late`: a first attempt that can no longer start within `maxDelay`: the leader's misfire policy
 *   decides it (a catch-up run, or a slot recorded missed).
 * - `skip`: it ends `skipped` with the reason, never having started.
 * - `park`: not its turn (an earlier slot of the task goes first, or a run of it is in progress):
 *   it waits in Postgres, and the end of the run ahead of it hands it its turn (DESIGN §5
 *   "Graceful under overload") — it never goes round the queue for it.
 * - `wait`: ask again after `retryInMs` (a run released late is given the time it was late by).
 * - `buffer`: it becomes the one slot waiting behind the run in progress (`buffer_one`).
 * - `replace`: cancel the runs in progress (`replace`), then ask again.
 */
export type ClaimVerdict =
  | { kind: 'run' }
  | { kind: 'lost' }
  | { kind: 'early'; retryInMs: number }
  | { kind: 'late' }
  | { kind: 'skip'; reason: (typeof SKIP_REASONS)[number] }
  | { kind: 'park' }
  | { kind: 'wait'; retryInMs: number }
  | { kind: 'buffer' }
  | { kind: 'replace'; holderIds: string[] };

const RUN: ClaimVerdict = { kind: 'run' };
const LOST: ClaimVerdict = { kind: 'lost' };
const PARK: ClaimVerdict = { kind: 'park' };
const skip = (reason: (typeof SKIP_REASONS)[number]): ClaimVerdict => ({ kind: 'skip', reason });

/**
 * Whether an attempt of an execution may start now (`now`: Postgres' clock), DESIGN §4–§5 — the
 * whole judgement of a claim, in one place:
 *
 * 1. Only a pending execution (`scheduled`, `queued`, `retrying`) can start, or a `running` one
 *    whose lease expired while attempts remain (its worker died: the next attempt takes over).
 * 2. Never early: not before its `fire_at`, and a retry not before its `next_attempt_at`.
 * 3. A first attempt (manual runs aside) is skipped when its task is paused or was changed under
 *    it (an edit re-plans or pins every row it touches, so a row left on an old plan slipped past
 *    it), and is `late` past `fire_at + maxDelay` — unless flow control holds it back: the wait
 *    for its key is not lateness (its start lag shows it).
 * 4. An execution that is not exclusive (`overlap: allow`) runs.
 * 5. A slot being retried still holds its task: its next attempt — after a failure, a lease
 *    expiry, a crash — is never judged by the overlap policy; it only waits (parked) while another
 *    run of the task is actually running.
 * 6. A newcomer slot is judged by the overlap policy only against a run that was already in
 *    progress (running or retrying) at the slot's own `scheduled_for`, and as if that run had
 *    started on time: while the slot has waited less than the run started late — released late (a
 *    failover adopting it, the relay replacing a lost job), or parked behind such a backlog — the
 *    overlap may be that lateness's rather than the task's, and the slot asks again once it has
 *    waited as long. Under `buffer_one` a run's late start is its own policy's doing (the waiting
 *    slot starts when the running one ends, late by design): there only a late release counts.
 *    But a run that has lasted longer than the gap from the slot before this one to this one
 *    would overlap this slot had it started on time: the overlap is the task's own (a slow task),
 *    and the policy judges it at once — else a task slower than its schedule, once late, would
 *    park every new slot behind its backlog and never catch up.
 * 7. Otherwise a newcomer waits its turn (parked) while any run of the task is in progress or an
 *    earlier slot is due and has not started: backlogs run one after another, in slot order, and a
 *    slot that waited its turn is never skipped for it afterwards (every run it waits behind
 *    started after its time, so rule 6 cannot apply to it again).
 */
export function judgeClaim(context: ClaimContext, now: Date): ClaimVerdict {
  const { slot, task } = context;
  const at = now.getTime();
  const pending = isPlanned(slot.status);
  const takeover = slot.status === 'running' && slot.leaseUntil !== null && slot.leaseUntil.getTime() < at;
  if (!pending && slot.status !== 'retrying' && !takeover) return LOST;
  const first = slot.attempt === 0;
  if (!task) return first ? skip('task_deleted') : LOST;
  // The reaper ends an expired last attempt `dead`.
  if (takeover && !attemptsRemain(slot.attempt, task.maxAttempts)) return LOST;

  const dueAt = Math.max(slot.fireAt.getTime(), slot.status === 'retrying' ? (slot.nextAttemptAt?.getTime() ?? 0) : 0);
  if (at < dueAt) return { kind: 'early', retryInMs: dueAt - at };

  if (first && slot.trigger !== 'manual') {
    if (task.status === 'paused') return skip('paused');
    if (!slot.pinned && slot.taskVersion !== task.planVersion) return skip('task_changed');
    // A slot held back by flow control was judged in time when it was first held: the wait is not lateness.
    if (canBeLate(slot) && slot.heldAt === null && isLate(slot.fireAt, task.maxDelayMs, now)) return { kind: 'late' };
  }
  if (!slot.exclusive) return RUN;
  if (!first) return context.runsInProgress.some((h) => h.running) ? PARK : RUN;
  return judgeNewcomer(context, task, at);
}

function judgeNewcomer(context: ClaimContext, task: ClaimTask, at: number): ClaimVerdict {
  const { slot, runsInProgress } = context;
  const slotAt = slot.scheduledFor.getTime();
  const atItsTime = runsInProgress.filter((h) => h.firstStartedAt.getTime() <= slotAt);
  if (atItsTime.length === 0) return taskIsFree(context) ? RUN : PARK;

  // A run released on time may still start late: parked behind the late runs of a failover's
  // backlog, its start is that backlog's lateness, not the task's overlap — except under
  // buffer_one, whose waiting slot starts late because of the very overlap the policy judges.
  const late = (h: RunInProgress) =>
    (task.overlap === 'buffer_one' ? (h.releasedAt ?? h.firstStartedAt) : h.firstStartedAt).getTime() -
    h.fireAt.getTime();
  const allowance = Math.max(...atItsTime.map(late));
  // A scheduled slot's gap from the one before; a manual run or a backfill has no place in the schedule.
  const gap =
    context.previousSlotAt === null || slot.trigger !== 'schedule'
      ? Infinity
      : slotAt - context.previousSlotAt.getTime();
  const ranFor = Math.max(...atItsTime.map((h) => at - h.firstStartedAt.getTime()));
  // Asks again once the allowance is over, or once the run ahead has lasted the gap (or sooner,
  // when the run ends on the same worker: then it was quick, and the slot waits its turn).
  if (at - slotAt < allowance && ranFor < gap)
    return { kind: 'wait', retryInMs: Math.min(allowance - (at - slotAt), gap - ranFor) };

  switch (task.overlap) {
    case 'skip':
      return skip('overlap');
    case 'buffer_one':
      if (slot.nextAttemptAt !== null) return PARK;
      return context.otherBuffered ? skip('overlap') : { kind: 'buffer' };
    case 'replace':
      return { kind: 'replace', holderIds: atItsTime.map((h) => h.id) };
    case 'allow':
      // A row planned exclusive under a policy since changed to allow: it runs once the task is free.
      return PARK;
  }
}
