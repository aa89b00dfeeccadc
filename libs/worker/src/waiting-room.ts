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
 * Jobs this worker sent back to wait for their task's turn (an earlier slot of the task first, in
 * slot order). Each comes back on its own after {@link waitBeforeRetryMs}; when an exclusive run of
 * the task ends here, its waiters are brought forward at once, so a backlog drains at the pace of
 * its runs. Waiters on other workers come back on their own.
 */
export class WaitingRoom {
  private readonly byTask = new Map<string, Map<string, Promotable>>();
  private readonly taskOf = new Map<string, string>();

  add(taskId: string, job: Promotable): void {
    if (!job.id) return;
    let jobs = this.byTask.get(taskId);
    if (!jobs) this.byTask.set(taskId, (jobs = new Map()));
    jobs.set(job.id, job);
    this.taskOf.set(job.id, taskId);
  }

  /** A job came back on its own: it no longer waits here. */
  remove(jobId: string | undefined): void {
    const taskId = jobId === undefined ? undefined : this.taskOf.get(jobId);
    if (!taskId) return;
    this.taskOf.delete(jobId!);
    const jobs = this.byTask.get(taskId);
    jobs?.delete(jobId!);
    if (jobs?.size === 0) this.byTask.delete(taskId);
  }

  /** The task's turn is free: its waiters here come back now (one wins the claim, the rest wait again). */
  async wake(taskId: string): Promise<number> {
    const jobs = this.byTask.get(taskId);
    if (!jobs) return 0;
    this.byTask.delete(taskId);
    for (const id of jobs.keys()) this.taskOf.delete(id);
    // A job already back in the queue cannot be promoted: it is on its way anyway.
    await Promise.all([...jobs.values()].map((job) => job.promote().catch(() => undefined)));
    return jobs.size;
  }

  get size(): number {
    let n = 0;
    for (const jobs of this.byTask.values()) n += jobs.size;
    return n;
  }
}
