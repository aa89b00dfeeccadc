import { Inject, Injectable } from '@nestjs/common';
import { CONFIG, type Config } from '@punctual/config';
import { formatDuration, type RetentionInForce } from '@punctual/contract';
import type { RetentionRules } from '@punctual/planning';
import { PrismaService } from '../prisma.service.js';
import { HistoryPartitionsRepository } from './history-partitions.repository.js';
import { HistoryPruneRepository } from './history-prune.repository.js';
import { LiveHorizonRepository } from './live-horizon.repository.js';

/** The retention in force of one namespace, as the API shows it. */
export interface NamespaceRetentionView {
  history: RetentionInForce;
  deadLetters: RetentionInForce;
}

/** What the cluster keeps (see `GET /v1/cluster`). */
export interface ClusterRetentionView {
  history: string;
  deadLetters: string;
  audit: string;
  oldestSlot: string | null;
  liveFrom: string | null;
  partitions: number;
  namespaces: { namespace: string; history: string; deadLetters: string }[];
}

/** A task whose `maxDelay` a retention would not cover (see {@link HistoryRetention.longestMaxDelay}). */
export interface LongestDelay {
  task: string;
  maxDelayMs: number;
}

/**
 * The retention rules in force, read from the config and the namespaces (see `RetentionRules`), for
 * the API: what a namespace and the cluster keep, and what a retention must cover.
 */
@Injectable()
export class HistoryRetention {
  constructor(
    @Inject(CONFIG) private readonly config: Config,
    private readonly prisma: PrismaService,
    private readonly prune: HistoryPruneRepository,
    private readonly partitions: HistoryPartitionsRepository,
    private readonly horizon: LiveHorizonRepository,
  ) {}

  async rules(): Promise<RetentionRules> {
    const {
      historyRetentionMs: historyMs,
      deadLetterRetentionMs: deadLettersMs,
      auditRetentionMs: auditMs,
    } = this.config;
    return this.prune.rules({ historyMs, deadLettersMs, auditMs });
  }

  /** What a namespace keeps, its own retentions given (null: the cluster's), at `now`. */
  async ofNamespace(
    namespace: string,
    own: { historyMs: number | null; deadLettersMs: number | null },
    now = new Date(),
  ): Promise<NamespaceRetentionView> {
    const rules = await this.rules();
    const r = rules.of(namespace);
    const show = (ownMs: number | null, inForce: number): RetentionInForce => ({
      own: ownMs === null ? null : formatDuration(ownMs),
      inForce: formatDuration(inForce),
      keptFrom: new Date(now.getTime() - inForce).toISOString(),
    });
    return { history: show(own.historyMs, r.historyMs), deadLetters: show(own.deadLettersMs, r.deadLettersMs) };
  }

  /** What the cluster keeps, and how far back its history goes. */
  async ofCluster(): Promise<ClusterRetentionView> {
    const [rules, partitions, liveFrom] = await Promise.all([
      this.rules(),
      this.partitions.list(),
      this.horizon.liveFrom(),
    ]);
    let oldest: Date | null = null;
    for (const p of partitions) {
      if (await this.prune.isEmpty(p)) continue;
      oldest = p.from ?? (await this.prune.oldestSlotIn(p));
      break;
    }
    const base = rules.of('\u0000');
    return {
      history: formatDuration(base.historyMs),
      deadLetters: formatDuration(base.deadLettersMs),
      audit: formatDuration(this.config.auditRetentionMs),
      oldestSlot: oldest?.toISOString() ?? null,
      liveFrom: liveFrom?.toISOString() ?? null,
      partitions: partitions.length,
      namespaces: rules.overrides().map(([namespace, r]) => ({
        namespace,
        history: formatDuration(r.historyMs),
        deadLetters: formatDuration(r.deadLettersMs),
      })),
    };
  }

  /** The task of `namespace` with the longest `maxDelay` (null: it has none): what a retention of it must cover. */
  async longestMaxDelay(namespace: string): Promise<LongestDelay | null> {
    const [row] = await this.prisma.$queryRaw<{ name: string; max_delay_ms: number }[]>`
      SELECT name, max_delay_ms FROM task WHERE namespace = ${namespace} ORDER BY max_delay_ms DESC LIMIT 1`;
    return row ? { task: row.name, maxDelayMs: row.max_delay_ms } : null;
  }

  /** The retention of ended executions in force in a namespace (its own, else the cluster's). */
  async historyMsOf(namespace: string): Promise<number> {
    const [row] = await this.prisma.$queryRaw<{ ms: bigint | null }[]>`
      SELECT history_retention_ms AS ms FROM namespace WHERE name = ${namespace}`;
    return row?.ms != null ? Number(row.ms) : this.config.historyRetentionMs;
  }
}
