import { Writable } from 'node:stream';
import { Logger } from '@nestjs/common';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { PinoNestLogger } from './pino-logger.js';

/** A PinoNestLogger that writes its lines into `lines`, as parsed JSON. */
function capture(level = 'debug') {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return { lines, logger: new PinoNestLogger(pino({ level, base: null, timestamp: false }, sink)) };
}

describe('PinoNestLogger', () => {
  afterEach(() => Logger.overrideLogger(false));

  it("writes Nest Logger calls as pino lines: the caller's context, fields first, an Error as err", () => {
    const { lines, logger } = capture();
    Logger.overrideLogger(logger);
    const log = new Logger('SchedulerService');
    log.log('became leader');
    log.warn({ epoch: '7', shard: 2 }, 'fenced out');
    log.error({ err: new Error('boom') }, 'tick failed');
    log.debug('detail');
    expect(lines.map(({ level, context, msg, epoch, shard }) => ({ level, context, msg, epoch, shard }))).toEqual([
      { level: 30, context: 'SchedulerService', msg: 'became leader', epoch: undefined, shard: undefined },
      { level: 40, context: 'SchedulerService', msg: 'fenced out', epoch: '7', shard: 2 },
      { level: 50, context: 'SchedulerService', msg: 'tick failed', epoch: undefined, shard: undefined },
      { level: 20, context: 'SchedulerService', msg: 'detail', epoch: undefined, shard: undefined },
    ]);
    expect(lines[2]!.err).toMatchObject({ type: 'Error', message: 'boom' });
  });

  it("puts the stack Nest's exception handler passes beside a message on err, not in the message", () => {
    const { lines, logger } = capture();
    const stack = 'Error: boom\n    at handler (file.js:1:1)';
    logger.error('boom', stack, 'ExceptionsHandler');
    expect(lines[0]).toMatchObject({
      level: 50,
      context: 'ExceptionsHandler',
      msg: 'boom',
      err: { message: 'boom', stack },
    });
  });

  it('takes a trailing stack for the stack, not the context, when the caller has no context', () => {
    const { lines, logger } = capture();
    const stack = 'Error: boom\n    at onModuleInit (file.js:1:1)';
    logger.error('boom', stack);
    expect(lines[0]).toMatchObject({ level: 50, msg: 'boom', err: { message: 'boom', stack } });
    expect(lines[0]!.context).toBeUndefined();
  });

  it('writes nothing below its level', () => {
    const { lines, logger } = capture('warn');
    logger.log('quiet', 'Ctx');
    logger.verbose('quieter', 'Ctx');
    logger.warn('loud', 'Ctx');
    expect(lines.map((l) => l.msg)).toEqual(['loud']);
  });
});
