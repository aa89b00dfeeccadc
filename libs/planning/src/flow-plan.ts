// Flow control's decision for a batch of claims, from what the locked check read (see
// FlowControlRepository in @punctual/db): which start, which are held, and when each held one
// should ask again. Pure: the repository reads and writes, this decides.

/** What the plan needs of a claim: its execution and the `fire_at` it was judged with. */
export interface FlowWrite {
  id: string;
  seen: { fireAt: Date };
}

/** A task's flow control (DESIGN §5), as its policy says, and its namespace's run quotas. */
export interface FlowPolicy {
  concurrency: { key: string; limit: number } | null;
  rate: { key: string; limit: number; perMs: number } | null;
  /** Its namespace's run quotas, when the namespace has any (see {@link RunQuota}). */
  quota?: RunQuota | null;
}

/**
 * A namespace's run quotas (`maxConcurrentRuns`, `maxRunsPerMinute`; null: no limit): every run of
 * the namespace counts, whatever its task's own keys — as a concurrency key and a rate key of a
 * minute would, each run held over them keeping its place in `fire_at` order.
 */
export interface RunQuota {
  namespace: string;
  concurrency: number | null;
  perMinute: number | null;
}

/** A run quota's window: a minute. */
export const QUOTA_PER_MS = 60_000;

/** What {@link quotaFlowKey} puts before the namespace (also the key of the quota's overrun permits, in SQL). */
export const QUOTA_KEY_PREFIX = '#quota/';

/**
 * The key a run held on its namespace's run quotas waits on (woken as a flow-control key is). No
 * task's key can be it: a task's key holds no `/` and is scoped as `namespace/key` (or bare in the
 * default namespace), and `#quota` is no namespace's name.
 */
export const quotaFlowKey = (namespace: string): string => `${QUOTA_KEY_PREFIX}${namespace}`;

/**
 * A run held: a key is at its limit, or an earlier run waits on it: the run is marked held and comes
 * back — after `retryInMs` when the rate window says when, or when a run of `key` ends (or a held
 * one starts and leaves room). `ahead`: runs held before it on its keys (200 at most counted).
 */
export interface HeldOutcome {
  kind: 'held';
  key: string;
  retryInMs: number | null;
  ahead: number;
}

/**
 * A start counts in its key's window this much longer than `per` (5 %, at most 50 ms): between the
 * claim's commit and the far end seeing the request lie a few milliseconds that vary from run to
 * run, and without the margin two starts a window apart at the claim could land inside one window
 * at the far end.
 */
export function rateWindowMs(perMs: number): number {
  return perMs + Math.min(50, Math.floor(perMs / 20));
}

/** Held runs counted ahead of one (to spread their returns); beyond this, "many". */
export const AHEAD_COUNTED = 200;

/**
 * A run's place among the runs held on its keys, as Postgres orders them — by `fire_at`, then by
 * id (a uuid compares as its lower-case text) — as a string that sorts the same way: the claim's
 * FIFO and a worker's waiting room (which run it brings forward first) use this one order.
 */
export const flowOrder = (fireMs: number, id: string): string =>
  `${String(fireMs).padStart(16, '0')}:${id.toLowerCase()}`;

/** `a` goes before `b` (see {@link flowOrder}). */
export const before = (a: { fireMs: number; id: string }, b: { fireMs: number; id: string }) =>
  flowOrder(a.fireMs, a.id) < flowOrder(b.fireMs, b.id);

/** What the locked check (`FLOW_CHECK`) and the look before the lock read. */
export interface FlowCheck {
  now_ms: number;
  running: number;
  first_held: { fireMs: number; id: string } | null;
  held: number;
  window_ms: number[];
  /** The same of the namespace's run quotas (the flow control's `quota`), or null. */
  quota?: Omit<FlowCheck, 'now_ms' | 'quota'> | null;
}

export interface Placed<W extends FlowWrite = FlowWrite> {
  w: W;
  /** Its place in the batch as given. */
  i: number;
  fireMs: number;
  id: string;
}

/** Which claims of a batch start (`going`, in order) and which are held, and the room the keys had. */
export interface BatchPlan<W extends FlowWrite = FlowWrite> {
  going: Placed<W>[];
  waiting: Placed<W>[];
  permits: number;
  starts: number;
  /** Of the run quota: its room, and its first held run's place in the batch's order (the first that may not go past it). */
  quota: { permits: number; starts: number; firstBehind: number } | null;
}

/**
 * Whether a held run of the plan waits on its namespace's run quota (else on its task's keys): the
 * quota is what stopped the batch (its room all taken by the runs that go), or the run is behind
 * one already held on it; `at`: its place in the batch's order.
 */
export function heldOnQuota(plan: BatchPlan, at: number): boolean {
  const q = plan.quota;
  return q !== null && (plan.going.length >= q.permits || plan.going.length >= q.starts || at >= q.firstBehind);
}

/** The claims of a batch in the order they go, `(fire_at, id)`. */
export function inOrder<W extends FlowWrite>(writes: W[]): Placed<W>[] {
  return writes
    .map((w, i) => ({ w, i, fireMs: w.seen.fireAt.getTime(), id: w.id }))
    .sort((a, b) => (before(a, b) ? -1 : before(b, a) ? 1 : 0));
}

export function planBatch<W extends FlowWrite>(check: FlowCheck, writes: W[], flow: FlowPolicy): BatchPlan<W> {
  // Only those before the first run already held may go at all.
  const order = inOrder(writes);
  const permits = flow.concurrency ? Math.max(0, flow.concurrency.limit - check.running) : Number.POSITIVE_INFINITY;
  const starts = flow.rate ? Math.max(0, flow.rate.limit - check.window_ms.length) : Number.POSITIVE_INFINITY;
  const firstBehind = (first: FlowCheck['first_held']) => {
    const at = first ? order.findIndex((o) => !before(o, first)) : -1;
    return at === -1 ? order.length : at;
  };
  const eligible = firstBehind(check.first_held);
  let quota: BatchPlan['quota'] = null;
  if (flow.quota && check.quota) {
    const { concurrency, perMinute } = flow.quota;
    quota = {
      permits: concurrency === null ? Number.POSITIVE_INFINITY : Math.max(0, concurrency - check.quota.running),
      starts: perMinute === null ? Number.POSITIVE_INFINITY : Math.max(0, perMinute - check.quota.window_ms.length),
      firstBehind: firstBehind(check.quota.first_held),
    };
  }
  const going = order.slice(
    0,
    Math.min(
      eligible,
      permits,
      starts,
      quota?.permits ?? Infinity,
      quota?.starts ?? Infinity,
      quota?.firstBehind ?? Infinity,
    ),
  );
  return { going, waiting: order.slice(going.length), permits, starts, quota };
}

/**
 * When a held run should ask again. Waiting for a permit (`onPermit`, or behind runs that wait for
 * one): never on its own — a run of the key ending, or a held one starting with room left, wakes
 * it. Waiting on the rate window: when the start `limit` back from its place (`position`: runs
 * held ahead of it) leaves `window` (the starts, oldest first).
 */
export function heldOutcome(
  flow: FlowPolicy,
  onPermit: boolean,
  position: number,
  window: number[],
  nowMs: number,
): HeldOutcome {
  const ahead = Math.min(AHEAD_COUNTED, position);
  if (onPermit) return { kind: 'held', key: flow.concurrency!.key, retryInMs: null, ahead };
  const windowMs = rateWindowMs(flow.rate!.perMs);
  const perStart = windowMs / flow.rate!.limit;
  const at = window.length - flow.rate!.limit + position;
  const freeAt =
    at < 0
      ? nowMs + perStart
      : at < window.length
        ? window[at]! + windowMs
        : nowMs + windowMs + (at - window.length + 1) * perStart;
  return { kind: 'held', key: flow.rate!.key, retryInMs: Math.ceil(Math.max(0, freeAt - nowMs)), ahead };
}

/**
 * A run held on its namespace's run quota: waiting for a permit (`onPermit`) until a run of the
 * namespace ends, else — like a rate key's — until the start `perMinute` back from its place leaves the minute.
 */
export function heldOnQuotaOutcome(
  quota: RunQuota,
  onPermit: boolean,
  position: number,
  window: number[],
  nowMs: number,
): HeldOutcome {
  const key = quotaFlowKey(quota.namespace);
  // A quota of 0 runs a minute frees no start: the run waits for the quota to change (and asks now and then).
  if (onPermit || !quota.perMinute)
    return { kind: 'held', key, retryInMs: null, ahead: Math.min(AHEAD_COUNTED, position) };
  const asRate: FlowPolicy = { concurrency: null, rate: { key, limit: quota.perMinute, perMs: QUOTA_PER_MS } };
  return heldOutcome(asRate, false, position, window, nowMs);
}

/** The held outcomes of a plan, into `outcomes` (see {@link heldOutcome}; this batch's starts are in the window). */
export function heldOutcomes<O, W extends FlowWrite>(
  check: FlowCheck,
  plan: BatchPlan<W>,
  claimed: string[],
  flow: FlowPolicy,
  outcomes: (O | HeldOutcome)[],
): (O | HeldOutcome)[] {
  const window = [...check.window_ms, ...claimed.map(() => check.now_ms)];
  plan.waiting.forEach((o, j) => {
    const at = plan.going.length + j;
    if (flow.quota && check.quota && plan.quota && heldOnQuota(plan, at)) {
      const q = plan.quota;
      const onPermit = plan.going.length >= q.permits && (flow.quota.perMinute === null || q.permits <= q.starts);
      const quotaWindow = [...check.quota.window_ms, ...claimed.map(() => check.now_ms)];
      outcomes[o.i] = heldOnQuotaOutcome(flow.quota, onPermit, check.quota.held + j, quotaWindow, check.now_ms);
      return;
    }
    const onPermit =
      flow.concurrency !== null &&
      (plan.going.length + j >= plan.permits || flow.rate === null || plan.permits <= plan.starts);
    outcomes[o.i] = heldOutcome(flow, onPermit, check.held + j, window, check.now_ms);
  });
  return outcomes;
}
