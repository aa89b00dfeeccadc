import {
  type DynamicModule,
  Global,
  type InjectionToken,
  Module,
  type ModuleMetadata,
  type OptionalFactoryDependency,
} from '@nestjs/common';
import type { Config } from './config.js';

/** Injection token of the frozen {@link Config}. */
export const CONFIG = Symbol('punctual.config');

/** A {@link Config} made by a factory of the host app (which may inject, say, its own ConfigService). */
export interface ConfigFactory {
  imports?: ModuleMetadata['imports'];
  inject?: (InjectionToken | OptionalFactoryDependency)[];
  useFactory: (...args: never[]) => Config | Promise<Config>;
}

/** Makes one validated {@link Config} available to every module of an app. */
@Global()
@Module({})
export class ConfigModule {
  static forRoot(config: Config): DynamicModule {
    return { module: ConfigModule, providers: [{ provide: CONFIG, useValue: config }], exports: [CONFIG] };
  }

  static forRootAsync(factory: ConfigFactory): DynamicModule {
    return {
      module: ConfigModule,
      imports: factory.imports ?? [],
      providers: [
        {
          provide: CONFIG,
          inject: factory.inject ?? [],
          useFactory: factory.useFactory as (...args: unknown[]) => Config | Promise<Config>,
        },
      ],
      exports: [CONFIG],
    };
  }
}
