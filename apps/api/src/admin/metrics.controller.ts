import { Controller, Get, Header } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { Metrics } from '@punctual/metrics';
import { RequireRole } from '../auth/roles.js';

/** `/metrics` on the API: a viewer key, or the `METRICS_TOKEN` (the guard accepts it here only). */
@ApiExcludeController()
@Controller('metrics')
export class ApiMetricsController {
  constructor(private readonly metrics: Metrics) {}

  @Get()
  @RequireRole('viewer')
  @Header('Content-Type', 'text/plain; version=0.0.4; charset=utf-8')
  scrape(): Promise<string> {
    return this.metrics.registry.metrics();
  }
}
