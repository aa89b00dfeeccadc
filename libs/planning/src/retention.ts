/**
 * What Punctual keeps, and for how long — every table that grows, decided in one place (DESIGN §3
 * "History lifecycle"). Pure: retentions and instants in, cut-offs and decisions out; the SQL that
 * carries them out is in `@punctual/db` (history/).
 *
 * Every retention counts from a row's own instant: an execution's and its events' from its slot
 * (`scheduled_for`, the partition key: a day's partition holds one day of slots), an audit entry's
 * from when it was written, a delivered notification's from when it was delivered. A row that can
 * still change (a planned, running or retried execution) is never pruned, whatever its age.
 */

import { RETENTION_MIN_MS } from '@punctual/contract';

export { RETENTION_MIN_MS };

const DAY_MS = 86_400_000;

/** The widths a partition of `task_execution` may have, widest first (each divides a day). */
export const PARTITION_WIDTHS_MS = [DAY_MS, 6 * 3_600_000, 3_600_000, 15 * 60_000] as const;

/** Rows of the small tables removed per statement: a pass never holds their locks for long. */
export const PRUNE_BATCH = 5_000;

/** The cluster's retentions (HISTORY_RETENTION, DEAD_LETTER_RETENTION, AUDIT_RETENTION). */
export interface RetentionSettings {
  historyMs: number;
  deadLettersMs: number;
  auditMs: number;
}

/** A namespace's own retentions (null: the cluster's). */
export interface NamespaceRetention {
  namespace: string;
  historyMs: number | null;
  deadLettersMs: number | null;
}

/** How long one namespace's executions are kept: ended ones, and dead letters. */
export interface EffectiveRetention {
  historyMs: number;
  deadLettersMs: number;
}

/** A partition of `task_execution` (and its twin of `execution_event`): the slots in `[from, to)`; `from` null: unbounded. */
export interface PartitionRange {
  from: Date | null;
  to: Date;
}

/**
 * What to do with a partition: `keep` it, `drop` it whole (every row in it is past every retention
 * that applies), or `trim` it — some rows are past their retention, others (dead letters, a
 * namespace that keeps longer) are not; or, for one the live horizon has not passed, `delete` its
 * ended rows past their retention in batches (it is being written: no swap, no drop) — only after
 * a retention was shortened below a partition's age (in steady state a partition is a quarter of
 * the shortest retention wide).
 */
export type PartitionDecision = { kind: 'keep' } | { kind: 'drop' } | { kind: 'trim' } | { kind: 'delete' };

/**
 * The retention rules of a cluster at one moment: the cluster's settings, each namespace's own, and
 * the floor no retention goes under — the longest `maxDelay` of any task (a slot that can still be
 * planned or claimed keeps its row, so its `UNIQUE (task_id, scheduled_for)` guard still stands).
 */
export class RetentionRules {
  private readonly byNamespace: Map<string, EffectiveRetention>;

  constructor(
    readonly cluster: RetentionSettings,
    namespaces: readonly NamespaceRetention[] = [],
    private readonly floorMs = RETENTION_MIN_MS,
  ) {
    this.byNamespace = new Map(namespaces.map((n) => [n.namespace, this.effective(n.historyMs, n.deadLettersMs)]));
  }

  private effective(historyMs: number | null, deadLettersMs: number | null): EffectiveRetention {
    const floor = Math.max(RETENTION_MIN_MS, this.floorMs);
    return {
      historyMs: Math.max(floor, historyMs ?? this.cluster.historyMs),
      deadLettersMs: Math.max(floor, deadLettersMs ?? this.cluster.deadLettersMs),
    };
  }

  /** A namespace's retentions (the cluster's unless it sets its own). */
  of(namespace: string): EffectiveRetention {
    return this.byNamespace.get(namespace) ?? this.effective(null, null);
  }

  /** The namespaces with retentions of their own, and what they are. */
  overrides(): [string, EffectiveRetention][] {
    return [...this.byNamespace];
  }

  /** Every retention that applies somewhere: the cluster's and each namespace's. */
  private all(): EffectiveRetention[] {
    return [this.effective(null, null), ...this.byNamespace.values()];
  }

  /** The longest any execution is kept: a partition older than this holds nothing to keep. */
  longestMs(): number {
    return Math.max(...this.all().map((r) => Math.max(r.historyMs, r.deadLettersMs)));
  }

  /** The shortest any execution is kept: a partition older than this holds something to remove. */
  shortestMs(): number {
    return Math.min(...this.all().map((r) => Math.min(r.historyMs, r.deadLettersMs)));
  }

  /**
   * How wide a new partition is: the widest of {@link PARTITION_WIDTHS_MS} that is at most a quarter
   * of the shortest retention — a day under the default 30 days, a quarter of an hour under one
   * hour — so that what a partition keeps past its rows' retention is at most a quarter of it.
   */
  partitionWidthMs(): number {
    const quarter = this.shortestMs() / 4;
    return PARTITION_WIDTHS_MS.find((w) => w <= quarter) ?? PARTITION_WIDTHS_MS.at(-1)!;
  }

  /**
   * Whether an execution of `namespace` with this slot is past its retention at `now`: an ended
   * one past the history retention, a dead letter past the dead-letter retention.
   */
  isExpired(namespace: string, slot: Date, dead: boolean, now: Date): boolean {
    const r = this.of(namespace);
    return slot.getTime() < now.getTime() - (dead ? r.deadLettersMs : r.historyMs);
  }

  /**
   * What to do with a partition of slots `[from, to)` at `now`. Only partitions wholly before the
   * live horizon (`liveFrom`: no row in them can still change) are dropped or swapped; one it has not
   * passed only loses ended rows, one by one.
   */
  decide(range: PartitionRange, liveFrom: Date | null, now: Date): PartitionDecision {
    if (liveFrom === null || range.to.getTime() > liveFrom.getTime()) {
      // The table as it was before partitioning (no lower bound) waits for the horizon to pass it:
      // its expired rows may be most of a large table, which batched deletes would only fill with dead rows.
      if (range.from === null) return { kind: 'keep' };
      return now.getTime() - range.from.getTime() > this.shortestMs() ? { kind: 'delete' } : { kind: 'keep' };
    }
    const age = now.getTime() - range.to.getTime();
    if (age >= this.longestMs()) return { kind: 'drop' };
    if (age >= this.shortestMs()) return { kind: 'trim' };
    return { kind: 'keep' };
  }

  /** The oldest slot a namespace's ended executions are kept from, at `now` (dead letters may go further back). */
  historyFrom(namespace: string, now: Date): Date {
    return new Date(now.getTime() - this.of(namespace).historyMs);
  }

  /**
   * Cut-offs of the tables beside the history, at `now`: rows before them are removed.
   * - `outbox`: a notification delivered (or given up) as long ago as the history retention;
   * - `audit`: an entry older than AUDIT_RETENTION — except the latest of its target, which says
   *   what is in force (the timeline reads a task's versions from its entries);
   * - `versions`: a version of a task changed that long ago, but the one it is at (a deleted task's
   *   last one goes too);
   * - `leadership`: a shard's leadership history as old as the longest history kept (the timeline
   *   explains a slot no leader planned by it);
   * - `flowStarts`: a rate key's starts a day old (the longest `per` is a day);
   * - `quotaStarts`: a namespace's starts an hour old (the quota counts a minute);
   * - `permits`: an overrun permit an hour past its end (its worker died without giving it back).
   */
  cutoffs(now: Date): TableCutoffs {
    const at = (ms: number) => new Date(now.getTime() - ms);
    return {
      outbox: at(this.effective(null, null).historyMs),
      audit: at(this.cluster.auditMs),
      versions: at(this.cluster.auditMs),
      leadership: at(this.longestMs()),
      flowStarts: at(DAY_MS),
      quotaStarts: at(3_600_000),
      permits: at(3_600_000),
    };
  }
}

/** See {@link RetentionRules.cutoffs}. */
export interface TableCutoffs {
  outbox: Date;
  audit: Date;
  versions: Date;
  leadership: Date;
  flowStarts: Date;
  quotaStarts: Date;
  permits: Date;
}

/**
 * The partition of width `widthMs` that holds `at`: its bounds aligned on multiples of the width
 * from the epoch (UTC midnights for a day), clipped to the gap `[after, before)` between the
 * partitions around it — so a new partition never overlaps one of another width.
 */
export function partitionFor(at: Date, widthMs: number, after: Date | null, before: Date | null): PartitionRange {
  const start = Math.floor(at.getTime() / widthMs) * widthMs;
  const from = Math.max(start, after?.getTime() ?? -Infinity);
  const to = Math.min(start + widthMs, before?.getTime() ?? Infinity);
  return { from: new Date(from), to: new Date(to) };
}
