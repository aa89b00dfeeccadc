import { Injectable } from '@nestjs/common';
import { PrismaService, type Db } from './prisma.service.js';

/** Owns the single `scheduler_state` row: the fencing epoch of the leader. */
@Injectable()
export class SchedulerStateRepository {
  constructor(private readonly prisma: PrismaService) {}

  /** Called by a new leader: takes the next epoch, which fences out every earlier leader. */
  async bumpEpoch(leaderId: string): Promise<bigint> {
    const rows = await this.prisma.$queryRaw<{ epoch: bigint }[]>`
      UPDATE scheduler_state SET epoch = epoch + 1, leader_id = ${leaderId}, acquired_at = now(), heartbeat_at = now()
      WHERE id = 1 RETURNING epoch`;
    return rows[0]!.epoch;
  }

  /**
   * The first statement of every planning transaction: true while `epoch` is still the newest.
   * The row lock it takes also serialises planners, so a stale leader waits and then sees 0 rows.
   */
  async fence(db: Db, epoch: bigint): Promise<boolean> {
    const changed = await db.$executeRaw`
      UPDATE scheduler_state SET heartbeat_at = now() WHERE id = 1 AND epoch = ${epoch.toString()}::bigint`;
    return changed === 1;
  }

  current() {
    return this.prisma.schedulerState.findUnique({ where: { id: 1 } });
  }
}
