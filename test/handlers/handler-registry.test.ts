import 'reflect-metadata';
import { Injectable, Module, Scope, type Type } from '@nestjs/common';
import { DiscoveryModule, NestFactory } from '@nestjs/core';
import { describe, expect, it } from 'vitest';
import { HandlerRegistry, TaskHandler } from '../../libs/handlers/src/index.js';

@Injectable({ scope: Scope.REQUEST })
class RequestScopedService {
  readonly greeting = 'hello';
}

@TaskHandler('singleton-greet')
class SingletonHandler {
  async run(): Promise<string> {
    return 'hello';
  }
}

// Decorators apply from the bottom up: @Injectable's scope above @TaskHandler is the one that holds.
@Injectable({ scope: Scope.REQUEST })
@TaskHandler('scoped-greet')
class ScopedHandler {
  async run(): Promise<string> {
    return 'hello';
  }
}

/** Request-scoped by what it injects: Nest makes it request-scoped too. */
@TaskHandler('bubbled-greet')
class BubbledHandler {
  constructor(private readonly service: RequestScopedService) {}
  async run(): Promise<string> {
    return this.service.greeting;
  }
}

/** The registry discovering `providers` in a Nest context of their own. */
function contextWith(providers: Type[]) {
  @Module({ imports: [DiscoveryModule], providers: [HandlerRegistry, RequestScopedService, ...providers] })
  class HostModule {}
  return NestFactory.createApplicationContext(HostModule, { logger: false, abortOnError: false });
}

describe('the handler registry', () => {
  it('discovers a singleton @TaskHandler provider', async () => {
    const app = await contextWith([SingletonHandler]);
    expect(app.get(HandlerRegistry).names()).toEqual(['singleton-greet']);
    await app.close();
  });

  it('refuses a request-scoped handler, or one made request-scoped by what it injects, naming it (it would run as an empty shell)', async () => {
    await expect(contextWith([ScopedHandler])).rejects.toThrow(
      /handler "scoped-greet" \(ScopedHandler\) is request-scoped/,
    );
    await expect(contextWith([BubbledHandler])).rejects.toThrow(
      /handler "bubbled-greet" \(BubbledHandler\) is request-scoped or depends on a request-scoped provider/,
    );
  });
});
