import { Test } from '@nestjs/testing';
import { ConfigModule, loadConfig } from '@punctual/config';
import { describe, expect, it } from 'vitest';
import { HandlerRegistry } from '../handler-registry.js';
import { hmacSigner } from '../handler-task.js';
import { HandlersModule } from '../handlers.module.js';
import { UnrecoverableError } from '../task-handler.js';
import { HttpHandler } from './http.handler.js';

describe('HttpHandler wiring', () => {
  it('is discovered as "http" and takes its allow list from the config', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [ConfigModule.forRoot(loadConfig({ HTTP_ALLOW_HOSTS: 'hooks.internal,127.0.0.1' })), HandlersModule],
    }).compile();
    await moduleRef.init();
    const handler = moduleRef.get(HandlerRegistry).get('http');
    expect(handler).toBeInstanceOf(HttpHandler);
    // Allowed, so not refused: the attempt gets as far as a (refused) connection on loopback port 1.
    const context = {
      execution: { id: 'e' },
      task: { timeoutMs: 5000, secretFields: [] },
      sign: hmacSigner('k'),
      payload: { url: 'http://127.0.0.1:1/' },
      signal: new AbortController().signal,
      log: { info() {} },
    };
    const error = await handler!.run(context as never).catch((e: Error) => e);
    expect(error).toBeInstanceOf(Error);
    expect(error).not.toBeInstanceOf(UnrecoverableError);
    expect((error as Error).message).toMatch(/^POST 127\.0\.0\.1:1 failed: /);
    await moduleRef.close();
  });
});
