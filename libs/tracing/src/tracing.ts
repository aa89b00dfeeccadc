import {
  type Attributes,
  type Context,
  context,
  INVALID_SPAN_CONTEXT,
  type Link,
  propagation,
  ROOT_CONTEXT,
  type Span,
  type SpanContext,
  SpanStatusCode,
  trace,
  type Tracer,
} from '@opentelemetry/api';

/** W3C trace context (`traceparent`, `tracestate`), as it travels in a job's data or a request's headers. */
export interface TraceContext {
  traceparent: string;
  tracestate?: string;
}

/** Where a new span hangs in its trace; by default under the active span, if any. */
export interface SpanOrigin {
  /** Continues a trace carried across a process boundary (a job's data). */
  parent?: TraceContext;
  /**
   * Items (by id) an earlier span {@link Tracing.mark marked}: the first one's span becomes the
   * parent and every other distinct one a link. A fire chunk follows the plan batches that planned its rows.
   */
  follows?: Iterable<{ id: string }>;
}

const NOT_RECORDING: Span = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

/**
 * Marks kept at most: a bound for marks never followed (rows of a leader that stepped down). Far
 * above what waits to fire at once (LOOKAHEAD_MS of slots).
 */
const MAX_MARKS = 200_000;

/** The attribute of a span that {@link Tracing.discard} keeps from export. */
export const DISCARD_ATTRIBUTE = 'punctual.discard';

/**
 * Spans around Punctual's own units of work: plan batch → fire chunk → attempt (claim, handler,
 * record), joined across processes by the W3C context a job carries. Off (each helper calls
 * straight through, nothing allocated) until {@link startTracing} registers an SDK.
 *
 * OpenTelemetry's API is process-global (one tracer provider, one context manager, one
 * propagator), so one instance, {@link tracing}, serves a process: call sites stay one line and no
 * constructor changes to carry it.
 */
export class Tracing {
  /** Where each marked item came from, by id: the same row may reach the timer as another object (a sweep). */
  private readonly origins = new Map<string, SpanContext>();
  private tracer: Tracer | null = null;

  get enabled(): boolean {
    return this.tracer !== null;
  }

  /** Turns the helpers on over the registered tracer provider, or off (`null`). */
  use(tracer: Tracer | null): void {
    this.tracer = tracer;
  }

  /**
   * Runs `fn` in a new active span named `name`: ended when `fn` settles, its status ERROR (with the
   * exception recorded) when `fn` throws. Spans started inside `fn` are its children.
   */
  async withSpan<T>(
    name: string,
    attributes: Attributes,
    fn: (span: Span) => Promise<T>,
    origin: SpanOrigin = {},
  ): Promise<T> {
    const tracer = this.tracer;
    if (!tracer) return fn(NOT_RECORDING);
    const { parent, links } = this.resolve(origin);
    return tracer.startActiveSpan(name, { attributes, links }, parent, async (span) => {
      try {
        return await fn(span);
      } catch (error) {
        span.recordException(error instanceof Error ? error : String(error));
        span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
        throw error;
      } finally {
        span.end();
      }
    });
  }

  /** Sets attributes on the active span (a count known only at the end, an outcome). */
  annotate(attributes: Attributes): void {
    if (this.tracer) trace.getActiveSpan()?.setAttributes(attributes);
  }

  /** Keeps the active span from being exported: it turned out to be idle (a planning tick with nothing due). */
  discard(): void {
    if (this.tracer) trace.getActiveSpan()?.setAttribute(DISCARD_ATTRIBUTE, true);
  }

  /** Remembers the active span as where `items` came from, for a later span that {@link SpanOrigin.follows} them. */
  mark(items: Iterable<{ id: string }>): void {
    const origin = this.tracer ? trace.getActiveSpan()?.spanContext() : undefined;
    if (!origin) return;
    for (const item of items) this.origins.set(item.id, origin);
    // Oldest first: a Map iterates in insertion order.
    for (const id of this.origins.keys()) {
      if (this.origins.size <= MAX_MARKS) break;
      this.origins.delete(id);
    }
  }

  /** The active span's context to carry across a process boundary; undefined when off or outside a span. */
  current(): TraceContext | undefined {
    if (!this.tracer) return undefined;
    const carrier: Partial<TraceContext> = {};
    propagation.inject(context.active(), carrier);
    return carrier.traceparent
      ? { traceparent: carrier.traceparent, ...(carrier.tracestate ? { tracestate: carrier.tracestate } : {}) }
      : undefined;
  }

  /** Adds `traceparent` (and `tracestate`) of the active span to outgoing HTTP headers. */
  injectHeaders(headers: Record<string, string>): void {
    if (this.tracer) propagation.inject(context.active(), headers);
  }

  private resolve(origin: SpanOrigin): { parent: Context; links: Link[] } {
    if (origin.parent) return { parent: propagation.extract(ROOT_CONTEXT, origin.parent), links: [] };
    const sources = new Map<string, SpanContext>();
    for (const item of origin.follows ?? []) {
      const source = this.origins.get(item.id);
      if (!source) continue;
      // Followed once: a row fired again later (after a failed push) starts from its fire.
      this.origins.delete(item.id);
      if (!sources.has(source.spanId)) sources.set(source.spanId, source);
    }
    const [first, ...others] = sources.values();
    if (!first) return { parent: context.active(), links: [] };
    return { parent: trace.setSpanContext(ROOT_CONTEXT, first), links: others.map((source) => ({ context: source })) };
  }
}

/** The process's tracing helpers (see {@link Tracing}). */
export const tracing = new Tracing();
