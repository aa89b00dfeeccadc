import {
  type DynamicModule,
  Inject,
  Injectable,
  type InjectionToken,
  Module,
  type ModuleMetadata,
  type OnModuleInit,
  type OptionalFactoryDependency,
  type Provider,
} from '@nestjs/common';
import { type Config, ConfigError, ConfigModule } from '@punctual/config';
import { DbModule } from '@punctual/db';
import { type HandlerMap, HandlerRegistry, HandlersModule } from '@punctual/handlers';
import { MetricsModule } from '@punctual/metrics';
import { RedisModule } from '@punctual/redis';
import { type PunctualWorkerOptions, workerConfig } from './worker-options.js';
import { WorkerCoreModule } from './worker.module.js';

const NAMED_HANDLERS = Symbol('punctual.named-handlers');

/** Registers the handlers given by name in the options, beside the discovered ones. */
@Injectable()
class NamedHandlers implements OnModuleInit {
  constructor(
    private readonly registry: HandlerRegistry,
    @Inject(NAMED_HANDLERS) private readonly handlers: HandlerMap,
  ) {}

  onModuleInit(): void {
    this.registry.registerEach(this.handlers);
  }
}

/** Options made by a factory of the host app, which may inject its own services (its ConfigService, say). */
export interface PunctualWorkerAsyncOptions {
  imports?: ModuleMetadata['imports'];
  inject?: (InjectionToken | OptionalFactoryDependency)[];
  useFactory: (
    ...args: never[]
  ) => Omit<PunctualWorkerOptions, 'handlers'> | Promise<Omit<PunctualWorkerOptions, 'handlers'>>;
  /** Handlers by name, known when the module is declared (a factory that returns `handlers` is refused). */
  handlers?: HandlerMap;
}

/**
 * A Punctual worker inside a Nest app: claims the cluster's executions and runs them with the
 * app's `@TaskHandler` providers (which get the app's own services injected) and the built-in
 * handlers, under the worker protocol of the built-in worker — leases, retries, overlap, flow
 * control, and a drain when the app closes (call `app.enableShutdownHooks()` so SIGTERM closes it).
 */
@Module({})
export class PunctualWorkerModule {
  static forRoot(options: PunctualWorkerOptions): DynamicModule {
    return PunctualWorkerModule.forConfig(workerConfig(options), options.handlers);
  }

  static forRootAsync(options: PunctualWorkerAsyncOptions): DynamicModule {
    const configModule = ConfigModule.forRootAsync({
      imports: options.imports,
      inject: options.inject,
      useFactory: async (...args: never[]) => {
        const made: PunctualWorkerOptions = await options.useFactory(...args);
        // The module's providers are fixed before the factory runs: handlers it returned could not be registered.
        if (made.handlers !== undefined)
          throw new ConfigError(
            'PunctualWorkerModule.forRootAsync: useFactory returned handlers; pass them as forRootAsync({ handlers }) (or as @TaskHandler providers)',
          );
        return workerConfig(made);
      },
    });
    return PunctualWorkerModule.assemble(configModule, options.handlers);
  }

  /** The worker of a validated {@link Config}: the built-in worker app's way in. */
  static forConfig(config: Config, handlers?: HandlerMap): DynamicModule {
    return PunctualWorkerModule.assemble(ConfigModule.forRoot(config), handlers);
  }

  private static assemble(configModule: DynamicModule, handlers: HandlerMap = {}): DynamicModule {
    const providers: Provider[] = [{ provide: NAMED_HANDLERS, useValue: handlers }, NamedHandlers];
    return {
      module: PunctualWorkerModule,
      imports: [configModule, DbModule.forRoot(), RedisModule, MetricsModule, HandlersModule, WorkerCoreModule],
      providers,
      exports: [WorkerCoreModule],
    };
  }
}
