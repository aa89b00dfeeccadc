import { Global, Module } from '@nestjs/common';
import { Metrics } from './metrics.js';
import { MetricsController } from './metrics.controller.js';

/** One metrics registry per process, served at `/metrics`. */
@Global()
@Module({ providers: [{ provide: Metrics, useFactory: () => new Metrics() }], controllers: [MetricsController], exports: [Metrics] })
export class MetricsModule {}
