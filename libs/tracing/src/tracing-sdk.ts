import { type Context, context, propagation, trace } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { core, NodeSDK, resources } from '@opentelemetry/sdk-node';
import {
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  type ReadableSpan,
  type Span,
  type SpanExporter,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace';
import { DISCARD_ATTRIBUTE, tracing } from './tracing.js';

export interface TracingOptions {
  /** `service.name` of every span: `punctual-scheduler`, `punctual-worker`… */
  serviceName: string;
  /** `service.instance.id` (INSTANCE_ID). */
  instanceId: string;
  /** OTLP/HTTP base URL (OTEL_EXPORTER_OTLP_ENDPOINT); spans go to `<endpoint>/v1/traces`. */
  endpoint?: string;
  /** Replaces the OTLP exporter (tests collect spans in memory). */
  exporter?: SpanExporter;
}

/** A running tracing SDK: `flush` exports what is buffered, `shutdown` also turns {@link tracing} off. */
export interface TracingHandle {
  flush(): Promise<void>;
  shutdown(): Promise<void>;
}

/** The OTLP traces URL for a base endpoint, as the OpenTelemetry spec derives it from OTEL_EXPORTER_OTLP_ENDPOINT. */
export function otlpTracesUrl(endpoint: string): string {
  return `${endpoint.replace(/\/+$/, '')}/v1/traces`;
}

/**
 * Starts OpenTelemetry's Node SDK for traces only (metrics stay with Prometheus, logs with pino):
 * W3C trace context, every root span sampled (and a parent's decision followed), spans batched
 * to the OTLP/HTTP exporter. Then turns the process's {@link tracing} helpers on.
 */
export function startTracing(options: TracingOptions): TracingHandle {
  if (!options.exporter && !options.endpoint) throw new Error('startTracing needs an endpoint or an exporter');
  const exporter = options.exporter ?? new OTLPTraceExporter({ url: otlpTracesUrl(options.endpoint!) });
  // Sized for a busy worker: about five spans per execution, a thousand executions a second.
  const processor = new BatchSpanProcessor({
    exporter,
    maxQueueSize: 20_000,
    maxExportBatchSize: 1_000,
    scheduledDelayMillis: 1_000,
  });
  const sdk = new NodeSDK({
    serviceName: options.serviceName,
    resource: resources.resourceFromAttributes({ 'service.instance.id': options.instanceId }),
    autoDetectResources: false,
    spanProcessors: [new DiscardFilter(processor)],
    sampler: new ParentBasedSampler({ root: new AlwaysOnSampler() }),
    textMapPropagator: new core.W3CTraceContextPropagator(),
    // Without these the SDK would start OTLP metric and log exporters of its own.
    metricReaders: [],
    logRecordProcessors: [],
    instrumentations: [],
  });
  sdk.start();
  tracing.use(trace.getTracer('punctual'));
  return {
    flush: () => processor.forceFlush(),
    shutdown: async () => {
      tracing.use(null);
      await sdk.shutdown();
      // Unregister the globals, so that a later start in the same process registers its own.
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
}

/** Passes every span on to `next` but those {@link Tracing.discard} marked. */
class DiscardFilter implements SpanProcessor {
  constructor(private readonly next: SpanProcessor) {}

  onStart(span: Span, parent: Context): void {
    this.next.onStart(span, parent);
  }

  onEnd(span: ReadableSpan): void {
    if (span.attributes[DISCARD_ATTRIBUTE] !== true) this.next.onEnd(span);
  }

  forceFlush(): Promise<void> {
    return this.next.forceFlush();
  }

  shutdown(): Promise<void> {
    return this.next.shutdown();
  }
}
