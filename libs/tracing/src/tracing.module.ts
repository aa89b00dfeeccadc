import { type DynamicModule, Logger, Module, type OnApplicationShutdown } from '@nestjs/common';
import type { Config } from '@punctual/config';
import type { TracingHandle } from './tracing-sdk.js';

/** The running tracing SDK of an app, if any; exports what is buffered on shutdown. */
class TracingLifecycle implements OnApplicationShutdown {
  constructor(private readonly handle: TracingHandle | null) {}

  async onApplicationShutdown(): Promise<void> {
    await this.handle?.shutdown();
  }
}

/**
 * OpenTelemetry traces of an app: off unless OTEL_EXPORTER_OTLP_ENDPOINT is set. The SDK is only
 * loaded then (it takes most of a second to import), so a process without tracing never pays for it.
 */
@Module({})
export class TracingModule {
  static forRoot(config: Config, app: string): DynamicModule {
    const start = async () => {
      if (!config.otlpEndpoint) return new TracingLifecycle(null);
      const { startTracing } = await import('./tracing-sdk.js');
      const handle = startTracing({
        serviceName: `punctual-${app}`,
        instanceId: config.instanceId,
        endpoint: config.otlpEndpoint,
      });
      new Logger('Tracing').log(`tracing on: spans to ${config.otlpEndpoint}`);
      return new TracingLifecycle(handle);
    };
    return { module: TracingModule, providers: [{ provide: TracingLifecycle, useFactory: start }] };
  }
}
