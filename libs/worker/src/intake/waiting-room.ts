import type { Disposition, WaitsFor } from '../claim/disposition.js';
/**
 * A queue job that can be brought forward (BullMQ's `Job.promote`), and told what for (its data's
 * `wokenFor`, BullMQ's `Job.updateData`): whichever worker takes it then knows.
 */
export interface Promotable {
  id?: string;
  promote(): Promise<void>;
  data?: object;
  updateData?(data: object): Promise<void>;
}

/**
 * How long a job whose turn has not come waits before it asks again: 20 ms at first, then longer,
 * never more than 250 ms — a backlog drains one run per wait at worst, several a second, faster
 * than a task every second adds to it (and at once where a run ends on the same worker).
 */
export function waitBeforeRetryMs(waitedMs: number): number {
  return Math.round(Math.min(250, Math.max(20, waitedMs / 20)));
}

/**
 * Jobs this worker sent back to wait, by what they wait for (a {@link WaitsFor}): their task's turn
 * (an earlier slot of the task first, in slot order), or a flow-control key with room. Each comes back
 * on its own after the wait it was given; when a turn frees here (an exclusive run of the task
 * ended) its waiters are brought forward at once, and when a key moves (a run of it ended or a
 * held one started, on any worker) its first waiter is — so a backlog drains at the pace of its
 * runs. Waiters on other workers come back on their own, or are woken by their own worker.
 */
export class WaitingRoom {
  /** Jobs by what they wait for (see {@link roomKey}), each with its place (lowest first, as strings compare). */
  private readonly byWait = new Map<string, Map<string, { job: Promotable; order: string }>>();
  private readonly waitOf = new Map<string, string>();

  add(waitsFor: WaitsFor, job: Promotable): void {
    if (!job.id) return;
    const key = roomKey(waitsFor);
    const order = 'order' in waitsFor ? waitsFor.order : '';
    this.remove(job.id);
    let jobs = this.byWait.get(key);
    if (!jobs) this.byWait.set(key, (jobs = new Map()));
    jobs.set(job.id, { job, order });
    this.waitOf.set(job.id, key);
  }

  /** A job came back on its own: it no longer waits here. */
  remove(jobId: string | undefined): void {
    const key = jobId === undefined ? undefined : this.waitOf.get(jobId);
    if (!key) return;
    this.waitOf.delete(jobId!);
    const jobs = this.byWait.get(key);
    jobs?.delete(jobId!);
    if (jobs?.size === 0) this.byWait.delete(key);
  }

  /**
   * A task's turn is free, or a key has room: the first `count` waiters on it here (all by default)
   * come back now — one wins the claim, the rest wait again. Returns how many were brought forward
   * (of a limited wake, how many could still be: one whose job is no longer delayed here is passed
   * over for the next).
   */
  async wake(waitsFor: { taskId: string } | { flowKey: string }, count = Number.POSITIVE_INFINITY): Promise<number> {
    const key = roomKey(waitsFor);
    const jobs = this.byWait.get(key);
    if (!jobs) return 0;
    const waiters = [...jobs.entries()];
    if (count < waiters.length)
      waiters.sort((a, b) => (a[1].order < b[1].order ? -1 : a[1].order > b[1].order ? 1 : 0));
    const bring = async ([id, { job }]: (typeof waiters)[number]): Promise<boolean> => {
      this.remove(id);
      // Woken for a key's room, it says so to whichever worker takes it (see wakePassedOn).
      if ('flowKey' in waitsFor && job.updateData)
        // Only a hint: without it the taker simply does not pass the key's word on.
        await job.updateData({ ...job.data, wokenFor: wokenForKey(waitsFor.flowKey) }).catch(() => undefined);
      // A job already back in the queue cannot be promoted: it is on its way anyway (or, taken by
      // another worker, was already run). Nor can one Redis did not answer for; it comes back when
      // its delay ends, as it would have without a wake.
      return job.promote().then(
        () => true,
        () => false,
      );
    };
    if (count >= waiters.length) return (await Promise.all(waiters.map(bring))).length;
    // The first `count` that can still be brought forward: an entry whose job came back elsewhere
    // does not use up the wake (the key's word would be lost with it).
    let brought = 0;
    for (const waiter of waiters) {
      if (brought >= count) break;
      if (await bring(waiter)) brought += 1;
    }
    return brought;
  }

  get size(): number {
    return this.waitOf.size;
  }
}

/** A job's `wokenFor` (ExecutionJobData) for a flow-control key: the key, prefixed. */
const WOKEN_FOR_PREFIX = 'flow:';
export const wokenForKey = (key: string): string => `${WOKEN_FOR_PREFIX}${key}`;

/** The room's own key of what a job waits for: a task's turn and a key's room never share one. */
const roomKey = (waitsFor: { taskId: string } | { flowKey: string }): string =>
  'taskId' in waitsFor ? `task:${waitsFor.taskId}` : wokenForKey(waitsFor.flowKey);

/**
 * The flow-control key whose word a job woken for `wokenFor` passes on, given what became of it: a
 * job woken for a key's room that did not take it — held on another key, parked, skipped, dropped,
 * sent elsewhere, come back for another reason — so the key's next waiter asks now instead of at
 * its next poll. Undefined when there is nothing to pass on: not woken for a key; it ran (its start
 * or its end moves the key); held on the same key again (no room after all); or Postgres is
 * unreachable (every waiter would fail alike).
 */
export function wakePassedOn(wokenFor: string | undefined, disposition: Disposition): string | undefined {
  if (wokenFor === undefined || !wokenFor.startsWith(WOKEN_FOR_PREFIX)) return undefined;
  const key = wokenFor.slice(WOKEN_FOR_PREFIX.length);
  if (disposition.kind === 'run' || disposition.kind === 'ended') return undefined;
  if (disposition.kind === 'later') {
    const { waitsFor, why } = disposition;
    if (why === 'unreachable' || (waitsFor && 'flowKey' in waitsFor && waitsFor.flowKey === key)) return undefined;
  }
  return key;
}
