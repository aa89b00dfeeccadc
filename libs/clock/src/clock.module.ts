import { type DynamicModule, Module } from '@nestjs/common';
import { CLOCK_ROLE, ClockService } from './clock.service.js';

/** The cluster's one clock (Postgres'), measured by each role. Needs ConfigModule, DbModule, RedisModule and MetricsModule. */
@Module({})
export class ClockModule {
  /** The clock of the role named `role` (a label of its offset metric, and of the cluster view). */
  static forRole(role: string): DynamicModule {
    return {
      module: ClockModule,
      providers: [{ provide: CLOCK_ROLE, useValue: role }, ClockService],
      exports: [ClockService],
    };
  }
}
