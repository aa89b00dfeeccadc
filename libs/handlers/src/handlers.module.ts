import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { BuiltinHandlers } from './builtin.handlers.js';
import { HandlerRegistry } from './handler-registry.js';
import { HttpHandler } from './http/http.handler.js';
import { TestHandlers } from './test.handlers.js';

/**
 * The handler registry and the built-in handlers (`http`, `noop`, `log` with WORKER_BUILTIN_HANDLERS;
 * `sleep` and `fail` only with ENABLE_TEST_HANDLERS). Apps add their own `@TaskHandler` providers.
 */
@Module({
  imports: [DiscoveryModule],
  providers: [HandlerRegistry, HttpHandler, BuiltinHandlers, TestHandlers],
  exports: [HandlerRegistry],
})
export class HandlersModule {}
