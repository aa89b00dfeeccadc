import { Inject, Injectable } from '@nestjs/common';
import { CONFIG, type Config } from '@punctual/config';
import { RetentionRules } from '@punctual/planning';
import { hasSqlState } from '../db-errors.js';
import type { Db } from '../prisma.service.js';
import { HistoryPartitionsRepository } from './history-partitions.repository.js';
import { HorizonPassedError, LiveHorizonRepository, WRITE_LAG_MS } from './live-horizon.repository.js';

/**
 * A transaction was about to write executions for which there is no room yet: a slot with no
 * partition, or a row made live below the live horizon. Neither can be made inside it (a new
 * partition, a lowered horizon: see LiveHorizonRepository); {@link HistoryRoom.withRoom} makes the
 * room and runs the transaction again.
 */
export class NoRoomError extends Error {
  override readonly name = 'NoRoomError';
  constructor(
    readonly slots: Date[],
    readonly liveSlots: Date[],
  ) {
    super(`no room yet for executions of ${slots.length} slot(s) from ${slots[0]?.toISOString() ?? '?'}`);
  }
}

/** SQLSTATE 23514 on an insert: "no partition of relation ... found for row" (or a check failed: looked at again). */
const CHECK_VIOLATION = '23514';

/**
 * Where executions are written: a partition for every slot, and the live horizon below every row
 * that can still change. Checked inside the writer's transaction ({@link check}), made outside it
 * ({@link makeRoom}); {@link withRoom} joins the two around a transaction.
 */
@Injectable()
export class HistoryRoom {
  private readonly widthMs: number;

  constructor(
    private readonly partitions: HistoryPartitionsRepository,
    private readonly horizon: LiveHorizonRepository,
    @Inject(CONFIG) config: Config,
  ) {
    this.widthMs = new RetentionRules({
      historyMs: config.historyRetentionMs,
      deadLettersMs: config.deadLetterRetentionMs,
      auditMs: config.auditRetentionMs,
    }).partitionWidthMs();
  }

  /**
   * Inside the transaction that writes executions of `slots`, `liveSlots` of them able to change
   * (planned, or made to run again): throws {@link NoRoomError} unless each has its partition and
   * the live horizon is below each live one — and holds the horizon there until the transaction ends.
   */
  async check(db: Db, slots: readonly Date[], liveSlots: readonly Date[] = slots): Promise<void> {
    if (slots.length === 0) return;
    if (!this.partitions.covers(slots)) {
      await this.partitions.list();
      if (!this.partitions.covers(slots)) throw new NoRoomError([...slots], [...liveSlots]);
    }
    const oldest = earliest(liveSlots);
    if (!oldest) return;
    try {
      await this.horizon.hold(db, oldest);
    } catch (error) {
      if (error instanceof HorizonPassedError) throw new NoRoomError([...slots], [...liveSlots]);
      throw error;
    }
  }

  /** Outside any transaction: a partition for each slot, and the horizon lowered below the oldest live one. */
  async makeRoom(slots: readonly Date[], liveSlots: readonly Date[] = slots): Promise<void> {
    await this.partitions.ensureCovered(slots, this.widthMs);
    const oldest = earliest(liveSlots);
    if (oldest && oldest.getTime() < Date.now() - WRITE_LAG_MS) await this.horizon.lowerTo(oldest);
  }

  /**
   * Runs `work` — a transaction that writes executions and calls {@link check} before it does — and,
   * when it finds no room, makes it and runs it again (twice at most: a partition dropped or a
   * horizon raised meanwhile is seen on the second try).
   */
  async withRoom<T>(work: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt += 1) {
      try {
        return await work();
      } catch (error) {
        if (attempt >= 2) throw error;
        if (error instanceof NoRoomError) await this.makeRoom(error.slots, error.liveSlots);
        // A partition this process thought was there is gone: read them again, the check says what is missing.
        else if (hasSqlState(error, CHECK_VIOLATION)) await this.partitions.list();
        else throw error;
      }
    }
  }
}

function earliest(slots: readonly Date[]): Date | null {
  let min: Date | null = null;
  for (const slot of slots) if (!min || slot.getTime() < min.getTime()) min = slot;
  return min;
}
