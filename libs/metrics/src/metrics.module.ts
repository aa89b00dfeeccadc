import { Global, Module } from '@nestjs/common';
import { Metrics } from './metrics.js';

/** One metrics registry per process. Apps serve it with a `/metrics` controller of their own choosing. */
@Global()
@Module({ providers: [{ provide: Metrics, useFactory: () => new Metrics() }], exports: [Metrics] })
export class MetricsModule {}
