import { Injectable } from '@nestjs/common';
import { type ExecutionStatus, Prisma } from '../../generated/prisma/client.js';
import { PrismaService } from '../../prisma.service.js';
import { CHANGED, type ClaimAnswer } from '../claim/claims.repository.js';
import { PLANNED_STATUSES, plannedSql } from '../predicates.js';
import { HAND_OVER, PARK, PARK_AT_FIRE } from './turn-statements.js';

const PARKED: ClaimAnswer = { kind: 'parked' };

/** A slot handed its turn: its job is to be pushed (see TurnsRepository). */
export interface HandedTurn {
  id: string;
  taskId: string;
  status: Extract<ExecutionStatus, 'scheduled' | 'queued' | 'retrying'>;
  attempt: number;
  fireMs: number;
  /** When it was handed its turn (Postgres' clock, epoch ms): the job of this turn is named by it. */
  handedMs: number;
  /** The handler it runs: its job goes to that handler's queue. */
  handler: string;
}

/** A slot to park, as the judgement read it. */
export interface ParkRequest {
  id: string;
  status: ExecutionStatus;
  attempt: number;
  /** When the leader released the job (epoch ms), as the job says. */
  releasedAt?: number | null;
}

/**
 * Turns of exclusive tasks (DESIGN §5 "Graceful under overload"): a slot whose turn has not come is
 * parked on its row — its queue job ends, nothing of it goes round the queue — and the worker that
 * records the end of the run ahead hands the task's next slot its turn (the success statement does
 * so itself; other ends call {@link handOver}); the caller pushes the job of each slot handed.
 */
@Injectable()
export class TurnsRepository {
  constructor(private readonly prisma: PrismaService) {}

  /**
   * Parks slots (see PARK), in one statement: one answer per request, in order — `parked`, or
   * `again` (`changed`) for a slot that has nothing ahead of it any more (the run it waited behind
   * ended meanwhile: claim it again) or changed.
   */
  async park(requests: ParkRequest[]): Promise<ClaimAnswer[]> {
    if (requests.length === 0) return [];
    const { rows } = await this.prisma.pool.query<{ id: string }>({
      name: this.prisma.statementName('punctual.turn.park'),
      text: PARK,
      values: [
        requests.map((r) => r.id),
        requests.map((r) => r.status),
        requests.map((r) => r.attempt),
        requests.map((r) => r.releasedAt ?? null),
      ],
    });
    const parked = new Set(rows.map((r) => r.id));
    return requests.map((r) => (parked.has(r.id) ? PARKED : CHANGED));
  }

  /**
   * Parks the on-time slots `ids` the leader fires at `releasedAt` (epoch ms) that could only wait
   * for their task's earlier slot (see PARK_AT_FIRE), in one statement. Returns the ids parked: the
   * others are pushed as usual.
   */
  async parkAtFire(ids: string[], releasedAt: number): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const { rows } = await this.prisma.pool.query<{ id: string }>({
      name: this.prisma.statementName('punctual.turn.park-at-fire'),
      text: PARK_AT_FIRE,
      values: [ids, releasedAt],
    });
    return new Set(rows.map((r) => r.id));
  }

  /**
   * Marks a pending execution as the one that waits for the task's run in progress
   * (`overlap=buffer_one`). The task row lock (`FOR NO KEY UPDATE`: claims and the planner do not
   * wait for it, an edit does) makes "at most one waiting" hold under races; the transaction is short
   * and bounded. False when another one already waits.
   */
  async markBuffered(id: string, taskId: string): Promise<boolean> {
    return this.prisma.$transaction(async (tx) => {
      await tx.$executeRaw`SET LOCAL idle_in_transaction_session_timeout = 2000`;
      await tx.$executeRaw`SET LOCAL lock_timeout = 2000`;
      await tx.$queryRaw`SELECT id FROM task WHERE id = ${taskId}::uuid FOR NO KEY UPDATE`;
      const changed = await tx.$executeRaw`
        UPDATE live_execution SET next_attempt_at = COALESCE(next_attempt_at, now())
        WHERE id = ${id}::uuid AND status IN ${Prisma.raw(PLANNED_STATUSES)}
          AND NOT EXISTS (
            SELECT 1 FROM live_execution o
            WHERE o.task_id = ${taskId}::uuid AND o.id <> ${id}::uuid AND ${Prisma.raw(plannedSql('o'))} AND o.next_attempt_at IS NOT NULL
          )`;
      return changed === 1;
    });
  }

  /** Hands the next parked slot of each of these tasks its turn, where nothing of the task is in progress (see handOver). */
  async handOver(taskIds: string[]): Promise<HandedTurn[]> {
    if (taskIds.length === 0) return [];
    const { rows } = await this.prisma.pool.query<{ handed: HandedTurn[] }>({
      name: this.prisma.statementName('punctual.turn.hand-over'),
      text: HAND_OVER,
      values: [[...new Set(taskIds)]],
    });
    return rows[0]?.handed ?? [];
  }
}
