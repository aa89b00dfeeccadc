import { Injectable } from '@nestjs/common';
import { isLockTimeout } from '../db-errors.js';
import { type Db, PrismaService } from '../prisma.service.js';
import { type HistoryPartition, HistoryPartitionsRepository, partitionIdent } from './history-partitions.repository.js';

/**
 * A row made live (planned, or a dead letter replayed) with a slot at least this old asks the live
 * horizon first; a younger one never needs to (see {@link RAISE_LAG_MS}).
 */
export const WRITE_LAG_MS = 2 * 60_000;

/**
 * The horizon never passes the partition of `now - RAISE_LAG_MS`: a row made live with a slot
 * younger than {@link WRITE_LAG_MS} is always above it, however the clocks of two processes differ
 * (by less than the gap between the two).
 */
export const RAISE_LAG_MS = 10 * 60_000;

/** A lowering or a raising of the horizon waits at most this long for the views' lock (see `move`). */
const VIEW_LOCK_TIMEOUT = '500ms';

/** A lowering tries this many times to take the views' lock before the writer's call fails. */
const LOWER_ATTEMPTS = 5;

/**
 * The live horizon moved past a row that is about to be made live: the caller's transaction
 * cannot lower it (that takes the views' lock, see {@link LiveHorizonRepository}); it makes room
 * (`HistoryRoom.makeRoom`) and tries again.
 */
export class HorizonPassedError extends Error {
  override readonly name = 'HorizonPassedError';
  constructor(readonly slot: Date) {
    super(`the live horizon is past ${slot.toISOString()}`);
  }
}

/**
 * The live horizon (`history_horizon.live_from`): no execution that can still change — planned,
 * queued, running, between attempts — has a slot before it. The claim path reads live rows through
 * the views `live_execution` and `live_execution_event`, which hold the horizon as a constant, so
 * each of its statements plans only the partitions from the horizon on (the day's, usually) however
 * many days of history there are, and Postgres prunes them at plan time, prepared statements included.
 *
 * Moving it replaces the views (`CREATE OR REPLACE VIEW`): that waits for every statement that
 * reads them to end and makes every prepared one plan again, so once it commits no statement sees
 * the old horizon — a barrier across every process, with nothing for a process to be told.
 * - Lowering (a backfill, a catch-up of an old slot, a dead letter replayed): before the writer's
 *   transaction, in one of its own ({@link lowerTo}); inside the writer's transaction,
 *   {@link hold} keeps it there until the writer commits (a share lock on its row).
 * - Raising (the leader, {@link raise}): under that row's exclusive lock, so after every writer that
 *   holds it committed; to the first partition with a live row, never past `now - RAISE_LAG_MS`.
 */
@Injectable()
export class LiveHorizonRepository {
  constructor(
    private readonly prisma: PrismaService,
    private readonly partitions: HistoryPartitionsRepository,
  ) {}

  /** The horizon (null: from the beginning — everything may be live). */
  async liveFrom(db: Db = this.prisma): Promise<Date | null> {
    const [row] = await db.$queryRaw<{ live_from: Date | null }[]>`
      SELECT CASE WHEN live_from = '-infinity' THEN NULL ELSE live_from END AS live_from FROM history_horizon WHERE id = 1`;
    return row?.live_from ?? null;
  }

  /**
   * Inside a transaction about to make rows live with slots as old as `slot`: keeps the horizon where
   * it is until the transaction ends, and throws {@link HorizonPassedError} when it is past `slot`.
   * A slot younger than {@link WRITE_LAG_MS} needs nothing.
   */
  async hold(db: Db, slot: Date, now = new Date()): Promise<void> {
    if (slot.getTime() >= now.getTime() - WRITE_LAG_MS) return;
    const [row] = await db.$queryRaw<{ passed: boolean }[]>`
      SELECT live_from > ${slot.toISOString()}::timestamptz AS passed FROM history_horizon WHERE id = 1 FOR SHARE`;
    if (row?.passed) throw new HorizonPassedError(slot);
  }

  /**
   * Lowers the horizon to the partition of `slot` (which must exist), in a transaction of its own.
   * Nothing happens when it is there already.
   */
  async lowerTo(slot: Date): Promise<void> {
    const partitions = await this.partitions.list();
    const home = partitions.find(
      (p) => (p.from === null || p.from.getTime() <= slot.getTime()) && slot.getTime() < p.to.getTime(),
    );
    if (!home) throw new Error(`no partition holds the slot ${slot.toISOString()}`);
    // The views' lock waits behind statements that read them: a long one makes it give up, and try again.
    for (let attempt = 1; ; attempt += 1) {
      try {
        await this.prisma.$transaction(async (tx) => {
          const current = await lockedFromMs(tx);
          if (current <= (home.from?.getTime() ?? -Infinity)) return;
          await this.move(tx, home.from);
        });
        return;
      } catch (error) {
        if (!isLockTimeout(error) || attempt >= LOWER_ATTEMPTS) throw error;
        await new Promise((resolve) => setTimeout(resolve, 100 * attempt));
      }
    }
  }

  /**
   * Raises the horizon to the oldest partition at or above it that still holds a live row, but never
   * past the partition of `now - RAISE_LAG_MS`. Returns the horizon after (null: from the beginning).
   */
  async raise(now = new Date()): Promise<Date | null> {
    try {
      return await this.raiseOnce(now);
    } catch (error) {
      // Busy views (a long statement reading them): the horizon stays, the next pass raises it.
      if (isLockTimeout(error)) return this.liveFrom();
      throw error;
    }
  }

  private raiseOnce(now: Date): Promise<Date | null> {
    return this.prisma.$transaction(async (tx) => {
      await tx.$executeRaw`SET LOCAL lock_timeout = '2s'`;
      // Waits for every writer that holds the horizon (see hold): their rows are committed, and the
      // statements below, each with a snapshot of its own, see them.
      const current = await lockedFromMs(tx);
      const currentAt = Number.isFinite(current) ? new Date(current) : null;
      const cap = now.getTime() - RAISE_LAG_MS;
      let target: HistoryPartition | null = null;
      for (const p of await this.partitions.list()) {
        if (p.to.getTime() <= current) continue;
        target = p;
        if (p.to.getTime() > cap || (await this.holdsLiveRows(tx, p))) break;
      }
      if (!target || (target.from?.getTime() ?? -Infinity) <= current) return currentAt;
      await this.move(tx, target.from);
      return target.from;
    });
  }

  /** Whether a partition holds a row that can still change (each question one look in a partial index). */
  private async holdsLiveRows(db: Db, p: HistoryPartition): Promise<boolean> {
    const table = partitionIdent(p.executions);
    const [row] = await db.$queryRawUnsafe<{ live: boolean }[]>(
      `SELECT EXISTS (SELECT 1 FROM ${table} WHERE status IN ('scheduled', 'queued', 'retrying'))
           OR EXISTS (SELECT 1 FROM ${table} WHERE status = 'running') AS live`,
    );
    return row?.live ?? true;
  }

  /** Sets the horizon and replaces the views that carry it (see the class comment). */
  private async move(db: Db, to: Date | null): Promise<void> {
    const at = to === null ? '-infinity' : to.toISOString();
    await db.$executeRaw`UPDATE history_horizon SET live_from = ${at}::timestamptz, updated_at = now() WHERE id = 1`;
    // The views' lock queues every statement of the claim path behind it: wait briefly, or give up
    // and come back (a raise on the next pass; a lowering's caller tries again).
    await db.$executeRawUnsafe(`SET LOCAL lock_timeout = '${VIEW_LOCK_TIMEOUT}'`);
    const literal = `'${at}'::timestamptz`;
    await db.$executeRawUnsafe(
      `CREATE OR REPLACE VIEW live_execution AS SELECT * FROM task_execution WHERE scheduled_for >= ${literal}`,
    );
    await db.$executeRawUnsafe(
      `CREATE OR REPLACE VIEW live_execution_event AS SELECT * FROM execution_event WHERE scheduled_for >= ${literal}`,
    );
  }
}

/** The horizon, its row locked for the rest of the transaction, as epoch ms (-Infinity: from the beginning). */
async function lockedFromMs(db: Db): Promise<number> {
  const [row] = await db.$queryRaw<{ from_ms: number }[]>`
    SELECT (extract(epoch FROM live_from) * 1000)::float8 AS from_ms FROM history_horizon WHERE id = 1 FOR UPDATE`;
  if (!row) throw new Error('history_horizon has no row: the migrations are not applied');
  return Number(row.from_ms);
}
