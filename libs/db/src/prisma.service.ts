import { Inject, Injectable, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { PrismaPg } from '@prisma/adapter-pg';
import { CONFIG, type Config } from '@punctual/config';
import pg from 'pg';
import { PrismaClient } from './generated/prisma/client.js';

/**
 * The one Prisma client of a process. A failed connection stops the start. It closes last, at
 * application shutdown, after the roles (onModuleDestroy) have drained their work.
 */
@Injectable()
export class PrismaService extends PrismaClient implements OnModuleInit, OnApplicationShutdown {
  /**
   * The connection pool under the client, for the few statements on a hot path (a worker's
   * batched claims and successes) where Prisma's per-statement overhead shows.
   */
  readonly pool: pg.Pool;

  constructor(@Inject(CONFIG) config: Config) {
    const pool = new pg.Pool({ connectionString: config.databaseUrl });
    super({ adapter: new PrismaPg(pool, { disposeExternalPool: true }) });
    this.pool = pool;
  }

  async onModuleInit(): Promise<void> {
    await this.$connect();
    await this.$queryRaw`SELECT 1`;
  }

  async onApplicationShutdown(): Promise<void> {
    await this.$disconnect();
  }
}

/** A client or an interactive transaction: repositories accept either. */
export type Db = Omit<PrismaClient, '$connect' | '$disconnect' | '$on' | '$transaction' | '$extends'>;
