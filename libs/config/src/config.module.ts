import { type DynamicModule, Global, Module } from '@nestjs/common';
import type { Config } from './config.js';

/** Injection token of the frozen {@link Config}. */
export const CONFIG = Symbol('punctual.config');

/** Makes one validated {@link Config} available to every module of an app. */
@Global()
@Module({})
export class ConfigModule {
  static forRoot(config: Config): DynamicModule {
    return { module: ConfigModule, providers: [{ provide: CONFIG, useValue: config }], exports: [CONFIG] };
  }
}
