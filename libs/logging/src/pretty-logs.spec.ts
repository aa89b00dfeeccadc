import type { LoggerService } from '@nestjs/common';
import { describe, expect, it } from 'vitest';
import { StartUpAtDebug } from './pretty-logs.js';

describe('StartUpAtDebug', () => {
  it("moves Nest's module and route lines to debug and passes everything else on as it came", () => {
    const seen: string[] = [];
    const inner: LoggerService = {
      log: (m) => seen.push(`log ${m}`),
      debug: (m) => seen.push(`debug ${m}`),
      warn: (m) => seen.push(`warn ${m}`),
      error: (m) => seen.push(`error ${m}`),
    };
    const logger = new StartUpAtDebug(inner);
    logger.log('Mapped {/v1/tasks, GET} route', 'RouterExplorer');
    logger.log('TasksCoreModule dependencies initialized', 'InstanceLoader');
    logger.log('became leader', 'SchedulerService');
    logger.warn('slow', 'RouterExplorer');
    expect(seen).toEqual([
      'debug Mapped {/v1/tasks, GET} route',
      'debug TasksCoreModule dependencies initialized',
      'log became leader',
      'warn slow',
    ]);
  });
});
