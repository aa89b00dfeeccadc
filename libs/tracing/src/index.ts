/**
 * OpenTelemetry traces: the process's `tracing` helpers around Punctual's units of work, the W3C
 * context a job carries across processes, and `TracingModule`, which loads the SDK only when
 * OTEL_EXPORTER_OTLP_ENDPOINT is set.
 *
 * @imports @punctual/config
 * @packageDocumentation
 */
export { type SpanOrigin, type TraceContext, Tracing, tracing } from './tracing.js';
export { TracingModule } from './tracing.module.js';
