import { Controller, Get, Header, Inject, Req, UnauthorizedException } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { Public } from '@punctual/auth';
import { CONFIG, type Config } from '@punctual/config';
import { Metrics } from '@punctual/metrics';
import type { Request } from 'express';
import { timingSafeEqual, createHash } from 'node:crypto';

/** Prometheus text. With `METRICS_TOKEN` set, scrapers must send it as a bearer token. */
@ApiExcludeController()
@Public()
@Controller('metrics')
export class MetricsController {
  constructor(
    private readonly metrics: Metrics,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  @Get()
  @Header('Content-Type', 'text/plain; version=0.0.4; charset=utf-8')
  async scrape(@Req() req: Request): Promise<string> {
    if (
      this.config.metricsToken &&
      !sameSecret(req.headers.authorization ?? '', `Bearer ${this.config.metricsToken}`)
    ) {
      throw new UnauthorizedException('send Authorization: Bearer <METRICS_TOKEN>');
    }
    return this.metrics.registry.metrics();
  }
}

const digest = (value: string) => createHash('sha256').update(value).digest();
function sameSecret(a: string, b: string): boolean {
  return timingSafeEqual(digest(a), digest(b));
}
