/**
 * How long an attempt waits for the handler of the same task's run claimed before it on this worker
 * to end (see LocalTurns): long enough for a short handler, short enough that a long one only
 * delays the slot's judgement by this much (the wait holds a job the worker took ahead, never a
 * handler slot).
 */
const LOCAL_TURN_WAIT_MS = 50;

/** An attempt's place in this worker's order of a task's attempts: it marks each step as it takes it. */
export interface LocalTurn {
  /** Its claim is decided (it runs, or found nothing to run). */
  claimed: () => void;
  /** Its handler ended. */
  handled: () => void;
  /** Its outcome is written (or it never ran): the next attempt of the task here may go. */
  settle: () => void;
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

interface Marks {
  claimed: Promise<void>;
  handled: Promise<void>;
  settled: Promise<void>;
}

/**
 * The order of a worker's attempts of each task. An attempt waits for the one of the same task
 * taken before it here to be claimed, then (at most LOCAL_TURN_WAIT_MS) for its handler to end,
 * and then for its outcome to be written. A backlog's consecutive slots of one task often meet on
 * one worker, and the run ahead is usually short: taken in that order, each finds its task free
 * and starts in one statement — no read, no park, no job of its own for its turn. A long run ahead
 * only delays the slot's judgement (a park, a skip, a replace) by the short wait.
 */
export class LocalTurns {
  /** The last attempt of each task taken here, by task. */
  private readonly last = new Map<string, Marks>();

  async take(taskId: string | undefined): Promise<LocalTurn> {
    if (!taskId) return { claimed: () => undefined, handled: () => undefined, settle: () => undefined };
    const previous = this.last.get(taskId);
    const marks = { claimed: deferred(), handled: deferred(), settled: deferred() };
    const mine: Marks = {
      claimed: marks.claimed.promise,
      handled: marks.handled.promise,
      settled: marks.settled.promise,
    };
    this.last.set(taskId, mine);
    if (previous) {
      await previous.claimed;
      let timer: NodeJS.Timeout | undefined;
      const handled = await Promise.race([
        previous.handled.then(() => true),
        new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), LOCAL_TURN_WAIT_MS))),
      ]);
      clearTimeout(timer);
      if (handled) await previous.settled;
    }
    return {
      claimed: marks.claimed.resolve,
      handled: marks.handled.resolve,
      settle: () => {
        marks.claimed.resolve();
        marks.handled.resolve();
        marks.settled.resolve();
        if (this.last.get(taskId) === mine) this.last.delete(taskId);
      },
    };
  }
}
