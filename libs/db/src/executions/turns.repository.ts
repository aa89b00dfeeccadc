import { Injectable } from '@nestjs/common';
import type { ExecutionStatus } from '../generated/prisma/client.js';
import { PrismaService } from '../prisma.service.js';
import { HAND_OVER, PARK } from './turn-statements.js';

/** A slot handed its turn: its job is to be pushed (see TurnsRepository). */
export interface HandedTurn {
  id: string;
  taskId: string;
  status: Extract<ExecutionStatus, 'scheduled' | 'queued' | 'retrying'>;
  attempt: number;
  fireMs: number;
  /** When it was handed its turn (Postgres' clock, epoch ms): the job of this turn is named by it. */
  handedMs: number;
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
   * Parks slots (see PARK), in one statement. Returns the ids parked; a slot left out has nothing
   * ahead of it any more (the run it waited behind ended meanwhile: claim it again) or changed.
   */
  async park(requests: ParkRequest[]): Promise<Set<string>> {
    if (requests.length === 0) return new Set();
    const { rows } = await this.prisma.pool.query<{ id: string }>({
      name: 'punctual.turn.park',
      text: PARK,
      values: [requests.map((r) => r.id), requests.map((r) => r.status), requests.map((r) => r.attempt), requests.map((r) => r.releasedAt ?? null)],
    });
    return new Set(rows.map((r) => r.id));
  }

  /** Hands the next parked slot of each of these tasks its turn, where nothing of the task is in progress (see handOver). */
  async handOver(taskIds: string[]): Promise<HandedTurn[]> {
    if (taskIds.length === 0) return [];
    const { rows } = await this.prisma.pool.query<{ handed: HandedTurn[] }>({ name: 'punctual.turn.hand-over', text: HAND_OVER, values: [[...new Set(taskIds)]] });
    return rows[0]?.handed ?? [];
  }
}
