import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { LogHandler, NoopHandler } from './builtin.handlers.js';
import { HandlerRegistry } from './handler-registry.js';
import { HttpHandler } from './http/http.handler.js';
import { TestHandlers } from './test.handlers.js';

/** The handler registry and the built-in handlers (`sleep` and `fail` only with ENABLE_TEST_HANDLERS). Apps add their own `@TaskHandler` providers. */
@Module({
  imports: [DiscoveryModule],
  providers: [HandlerRegistry, NoopHandler, LogHandler, HttpHandler, TestHandlers],
  exports: [HandlerRegistry],
})
export class HandlersModule {}
