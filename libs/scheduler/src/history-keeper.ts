import { Logger } from '@nestjs/common';
import type { Config } from '@punctual/config';
import type {
  HistoryPartition,
  HistoryPartitionsRepository,
  HistoryPruneRepository,
  LiveHorizonRepository,
} from '@punctual/db';
import type { Metrics } from '@punctual/metrics';
import { PRUNE_BATCH, type RetentionRules } from '@punctual/planning';

/**
 * The partitions ahead of now that a pass makes: the next one within this of its start. Rows are
 * planned seconds ahead, and a writer that finds no partition makes one (HistoryRoom): a partition
 * made early only adds to what every statement of the claim path plans over.
 */
const AHEAD_MS = 10 * 60_000;

/** A partition found with nothing to remove is looked at again after this long. */
const RECHECK_MS = 10 * 60_000;

/** The removal of one pass stops after about this long; the next pass goes on. */
const PASS_BUDGET_MS = 30_000;

/** The swap of a compacted partition waits at most this long for the tables' exclusive lock. */
const SWAP_LOCK_TIMEOUT_MS = 500;

/** Of a partition's rows, those past their retention (SQL, see HistoryPruneRepository.expired). */
type Expired = ReturnType<HistoryPruneRepository['expired']>;

/** What a pass did. */
export interface HistoryPass {
  liveFrom: Date | null;
  dropped: string[];
  compacted: string[];
  /** Rows removed from `task_execution` (with their events). */
  removed: number;
  /** Rows removed from the tables beside it. */
  beside: Record<string, number>;
}

/**
 * The history lifecycle's pass (DESIGN §3), run by shard 0's leader every HISTORY_PASS_MS:
 * makes the partitions the next minutes need, raises the live horizon, removes what the retention
 * rules let go — a partition whose every row is past its retention dropped whole (its disk back at
 * once), one that also keeps rows (dead letters, a namespace that keeps longer) compacted into a
 * partition of the rows that stay, or, when most rows stay, trimmed in batches — and prunes the
 * tables beside the history. Before rows go, what task health and a task's last run are read from
 * is kept (`task_history`). Each step is safe to repeat and to run twice at once (a leader deposed
 * mid-pass, its successor's pass): nothing is removed that the rules keep, nothing twice.
 */
export class HistoryKeeper {
  private readonly logger = new Logger('HistoryKeeper');
  /** Partitions found with nothing to remove, and when. */
  private readonly checked = new Map<string, number>();

  constructor(
    private readonly config: Pick<Config, 'historyRetentionMs' | 'deadLetterRetentionMs' | 'auditRetentionMs'>,
    private readonly partitions: HistoryPartitionsRepository,
    private readonly horizon: LiveHorizonRepository,
    private readonly prune: HistoryPruneRepository,
    private readonly metrics: Metrics,
  ) {}

  /** The rules in force: the cluster's retentions and each namespace's, over the longest `maxDelay`. */
  async rules(): Promise<RetentionRules> {
    const {
      historyRetentionMs: historyMs,
      deadLetterRetentionMs: deadLettersMs,
      auditRetentionMs: auditMs,
    } = this.config;
    return this.prune.rules({ historyMs, deadLettersMs, auditMs });
  }

  /** One pass at `now`; `leading` says whether this process still leads shard 0 (checked between steps). */
  async pass(now: Date, leading: () => boolean = () => true): Promise<HistoryPass> {
    const rules = await this.rules();
    const width = rules.partitionWidthMs();
    const report: HistoryPass = { liveFrom: null, dropped: [], compacted: [], removed: 0, beside: {} };
    await this.partitions.ensureAhead(now, Math.min(AHEAD_MS, width), width);
    if (!leading()) return report;
    report.liveFrom = await this.horizon.raise(now);
    const expired = this.prune.expired(rules, now);
    const until = Date.now() + PASS_BUDGET_MS;
    for (const partition of await this.partitions.list()) {
      if (!leading() || Date.now() > until) break;
      const decision = rules.decide(partition, report.liveFrom, now);
      if (decision.kind === 'keep') continue;
      if (
        decision.kind !== 'drop' &&
        (this.checked.get(partition.executions) ?? -Infinity) > now.getTime() - RECHECK_MS
      )
        continue;
      if (decision.kind === 'delete') {
        const removed = await this.trim(partition, expired, until);
        if (removed === 0) this.checked.set(partition.executions, now.getTime());
        report.removed += removed;
        continue;
      }
      const { expired: gone, total } =
        decision.kind === 'drop' ? { expired: 1, total: 1 } : await this.prune.countExpired(partition, expired);
      if (gone === 0) {
        this.checked.set(partition.executions, now.getTime());
        continue;
      }
      if (gone === total) report.removed += await this.dropWhole(partition, report);
      else if (gone * 2 >= total) report.removed += await this.compact(partition, expired, gone, report);
      else report.removed += await this.trim(partition, expired, until);
    }
    if (leading()) report.beside = await this.prune.pruneTables(rules.cutoffs(now));
    for (const [table, rows] of Object.entries(report.beside)) this.metrics.historyPruned.inc({ table }, rows);
    this.metrics.historyPruned.inc({ table: 'task_execution' }, report.removed);
    await this.observe(rules, now, report.liveFrom);
    if (report.dropped.length || report.compacted.length)
      this.logger.log(
        { dropped: report.dropped, compacted: report.compacted, removed: report.removed },
        'history past its retention removed',
      );
    return report;
  }

  private async dropWhole(partition: HistoryPartition, report: HistoryPass): Promise<number> {
    const rows = await this.prune.countRows(partition);
    await this.prune.keepTaskHistory(partition, null);
    await this.partitions.drop(partition);
    report.dropped.push(partition.executions);
    return rows;
  }

  private async compact(
    partition: HistoryPartition,
    expired: Expired,
    gone: number,
    report: HistoryPass,
  ): Promise<number> {
    await this.prune.keepTaskHistory(partition, expired);
    try {
      await this.prune.compact(partition, expired, SWAP_LOCK_TIMEOUT_MS);
    } catch (error) {
      // The tables were busy past the lock's wait: the next pass tries again (nothing changed).
      this.logger.warn({ err: error, partition: partition.executions }, 'compaction put off');
      return 0;
    }
    report.compacted.push(partition.executions);
    return gone;
  }

  /** Removes the few expired rows of a partition that keeps most of its rows, in batches, until `until`. */
  private async trim(partition: HistoryPartition, expired: Expired, until: number): Promise<number> {
    await this.prune.keepTaskHistory(partition, expired);
    let removed = 0;
    for (;;) {
      const batch = await this.prune.deleteExpired(partition, expired, PRUNE_BATCH);
      removed += batch;
      if (batch < PRUNE_BATCH || Date.now() > until) break;
    }
    return removed;
  }

  private async observe(rules: RetentionRules, now: Date, liveFrom: Date | null): Promise<void> {
    const age = (at: Date | null) => (at === null ? 0 : Math.max(0, (now.getTime() - at.getTime()) / 1000));
    const partitions = await this.partitions.list();
    this.metrics.historyPartitions.set(partitions.length);
    this.metrics.historyLiveFrom.set(liveFrom === null ? 0 : liveFrom.getTime() / 1000);
    // The history's oldest slot: its oldest partition's start (the table as it was: its oldest row, looked up once).
    let oldest: Date | null = null;
    for (const p of partitions) {
      if (await this.prune.isEmpty(p)) continue;
      oldest = p.from ?? (await this.legacyOldest(p));
      break;
    }
    const cutoffs = rules.cutoffs(now);
    const kept = (cutoff: Date) => (now.getTime() - cutoff.getTime()) / 1000;
    const longest = rules.longestMs() / 1000 + rules.partitionWidthMs() / 1000;
    for (const table of ['task_execution', 'execution_event']) {
      this.metrics.historyOldest.set({ table }, age(oldest));
      this.metrics.historyKept.set({ table }, longest);
    }
    const beside = await this.prune.oldestBeside();
    const keeps: Record<keyof typeof beside, number> = {
      outbox: kept(cutoffs.outbox),
      audit_log: Infinity, // the latest entry of each target stays, however old
      task_version: Infinity, // a task's versions stay while it exists
      shard_leadership: kept(cutoffs.leadership),
    };
    for (const [table, at] of Object.entries(beside) as [keyof typeof beside, Date | null][]) {
      this.metrics.historyOldest.set({ table }, age(at));
      if (Number.isFinite(keeps[table])) this.metrics.historyKept.set({ table }, keeps[table]);
    }
    for (const size of await this.partitions.sizes()) {
      this.metrics.historyRows.set({ table: size.table }, size.rows);
      this.metrics.historyBytes.set({ table: size.table }, size.bytes);
    }
  }

  private legacy: { at: Date | null } | null = null;

  private async legacyOldest(p: HistoryPartition): Promise<Date | null> {
    this.legacy ??= { at: await this.prune.oldestSlotIn(p) };
    return this.legacy.at;
  }
}
