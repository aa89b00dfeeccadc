import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { FailHandler, LogHandler, NoopHandler, SleepHandler } from './builtin.handlers.js';
import { HandlerRegistry } from './handler-registry.js';
import { HttpHandler } from './http/http.handler.js';

/** The handler registry and the built-in handlers. Apps add their own `@TaskHandler` providers. */
@Module({
  imports: [DiscoveryModule],
  providers: [HandlerRegistry, NoopHandler, LogHandler, SleepHandler, FailHandler, HttpHandler],
  exports: [HandlerRegistry],
})
export class HandlersModule {}
