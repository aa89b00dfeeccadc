import { Controller, Get, HttpCode, HttpStatus, Inject, Optional, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { Public } from '@punctual/auth';
import { appliedMigrations, findMigrationsDir, PrismaService, readMigrations } from '@punctual/db';
import { RedisService } from '@punctual/redis';
import type { Response } from 'express';

/** Extra readiness facts an app adds (the scheduler says whether it leads). */
export const HEALTH_DETAILS = Symbol('punctual.health-details');
export type HealthDetails = () => Record<string, unknown>;

/** `live`: the process answers. `ready`: Postgres and Redis answer. No auth: probes call these. */
@ApiExcludeController()
@Public()
@Controller('health')
export class HealthController {
  private expected: Promise<string[]> | undefined;

  constructor(
    private readonly prisma: PrismaService,
    private readonly redis: RedisService,
    @Optional() @Inject(HEALTH_DETAILS) private readonly details?: HealthDetails,
  ) {}

  @Get('live')
  @HttpCode(HttpStatus.OK)
  live() {
    return { status: 'ok' };
  }

  @Get('ready')
  async ready(@Res({ passthrough: true }) res: Response) {
    const [database, redis, migrations] = await Promise.all([
      withTimeout(this.prisma.$queryRaw`SELECT 1`),
      withTimeout(this.redis.client.ping()),
      withTimeout(this.migrationsApplied()),
    ]);
    const ok = database && redis && migrations;
    res.status(ok ? HttpStatus.OK : HttpStatus.SERVICE_UNAVAILABLE);
    return {
      status: ok ? 'ok' : 'unavailable',
      checks: { database: up(database), redis: up(redis), migrations: migrations ? 'applied' : 'pending' },
      ...this.details?.(),
    };
  }

  /** Every migration this build ships is recorded as applied (resolves false otherwise). */
  private async migrationsApplied(): Promise<true> {
    this.expected ??= readMigrations(findMigrationsDir()).then((m) => m.map((x) => x.name));
    const applied = await appliedMigrations((sql) => this.prisma.$queryRawUnsafe(sql));
    if ((await this.expected).every((name) => applied.has(name))) return true;
    throw new Error('migrations pending');
  }
}

const up = (ok: boolean) => (ok ? 'up' : 'down');

async function withTimeout(check: Promise<unknown>, ms = 2000): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([
      check.then(
        () => true,
        () => false,
      ),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}
