/** A queue job that can be brought forward (BullMQ's `Job.promote`). */
export interface Promotable {
  id?: string;
  promote(): Promise<void>;
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
 * Jobs this worker sent back to wait, by what they wait for: their task's turn (an earlier slot of
 * the task first, in slot order), or a flow-control key (`flow:<key>`) with room. Each comes back
 * on its own after the wait it was given; when a turn frees here (an exclusive run of the task
 * ended) its waiters are brought forward at once, and when a key moves (a run of it ended or a
 * held one started, on any worker) its first waiter is — so a backlog drains at the pace of its
 * runs. Waiters on other workers come back on their own, or are woken by their own worker.
 */
export class WaitingRoom {
  /** Jobs by turn, each with its place (lowest first, as strings compare). */
  private readonly byTurn = new Map<string, Map<string, { job: Promotable; order: string }>>();
  private readonly turnOf = new Map<string, string>();

  add(turn: string, job: Promotable, order = ''): void {
    if (!job.id) return;
    this.remove(job.id);
    let jobs = this.byTurn.get(turn);
    if (!jobs) this.byTurn.set(turn, (jobs = new Map()));
    jobs.set(job.id, { job, order });
    this.turnOf.set(job.id, turn);
  }

  /** A job came back on its own: it no longer waits here. */
  remove(jobId: string | undefined): void {
    const turn = jobId === undefined ? undefined : this.turnOf.get(jobId);
    if (!turn) return;
    this.turnOf.delete(jobId!);
    const jobs = this.byTurn.get(turn);
    jobs?.delete(jobId!);
    if (jobs?.size === 0) this.byTurn.delete(turn);
  }

  /**
   * The turn is free: its first `count` waiters here (all by default) come back now — one wins the
   * claim, the rest wait again. Returns how many were brought forward.
   */
  async wake(turn: string, count = Number.POSITIVE_INFINITY): Promise<number> {
    const jobs = this.byTurn.get(turn);
    if (!jobs) return 0;
    const chosen =
      count >= jobs.size
        ? [...jobs.entries()]
        : [...jobs.entries()]
            .sort((a, b) => (a[1].order < b[1].order ? -1 : a[1].order > b[1].order ? 1 : 0))
            .slice(0, count);
    for (const [id] of chosen) this.remove(id);
    // A job already back in the queue cannot be promoted: it is on its way anyway. Nor can one
    // Redis did not answer for; it comes back when its delay ends, as it would have without a wake.
    await Promise.all(chosen.map(([, { job }]) => job.promote().catch(() => undefined)));
    return chosen.length;
  }

  get size(): number {
    return this.turnOf.size;
  }
}

/** The waiting-room turn of a flow-control key (task turns are task ids, which never start so). */
export const flowTurn = (key: string): string => `flow:${key}`;
