import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { LogHandler, NoopHandler } from './builtin.handlers.js';
import { HandlerRegistry } from './handler-registry.js';

/** The handler registry and the built-in handlers. Apps add their own `@TaskHandler` providers. */
@Module({
  imports: [DiscoveryModule],
  providers: [HandlerRegistry, NoopHandler, LogHandler],
  exports: [HandlerRegistry],
})
export class HandlersModule {}
