import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { otlpTracesUrl, startTracing, type TracingHandle } from './tracing-sdk.js';
import { Tracing, tracing } from './tracing.js';

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/;

describe('Tracing, off', () => {
  it('calls straight through and carries nothing', async () => {
    const off = new Tracing();
    expect(await off.withSpan('work', {}, async (span) => span.isRecording())).toBe(false);
    const headers: Record<string, string> = {};
    off.injectHeaders(headers);
    expect(headers).toEqual({});
    expect(off.current()).toBeUndefined();
  });

  it('derives the OTLP traces URL from the base endpoint', () => {
    expect(otlpTracesUrl('http://collector:4318')).toBe('http://collector:4318/v1/traces');
    expect(otlpTracesUrl('http://collector:4318/')).toBe('http://collector:4318/v1/traces');
  });
});

describe('Tracing, on', () => {
  const exporter = new InMemorySpanExporter();
  let handle: TracingHandle;
  const spans = async () => {
    await handle.flush();
    return exporter.getFinishedSpans();
  };
  const named = (all: ReadableSpan[], name: string) => all.filter((s) => s.name === name);

  beforeAll(() => {
    handle = startTracing({ serviceName: 'punctual-test', instanceId: 'test-1', exporter });
  });
  afterAll(async () => {
    await handle.shutdown();
    expect(tracing.enabled).toBe(false);
  });

  it('nests spans, and a carried context continues the trace in another "process"', async () => {
    exporter.reset();
    const planned = [{ id: 'a' }, { id: 'b' }];
    await tracing.withSpan('plan', { batch: 1 }, async () => tracing.mark(planned));
    const carried = await tracing.withSpan('fire', {}, async () => tracing.current(), { follows: planned });
    expect(carried?.traceparent).toMatch(TRACEPARENT);
    const headers: Record<string, string> = {};
    await tracing.withSpan(
      'attempt',
      {},
      () => tracing.withSpan('handler', {}, async () => tracing.injectHeaders(headers)),
      { parent: carried },
    );

    const all = await spans();
    const [plan, fire, attempt, handler] = ['plan', 'fire', 'attempt', 'handler'].map((n) => named(all, n)[0]!);
    expect(new Set(all.map((s) => s.spanContext().traceId))).toEqual(new Set([plan.spanContext().traceId]));
    expect(fire.parentSpanContext?.spanId).toBe(plan.spanContext().spanId);
    expect(attempt.parentSpanContext?.spanId).toBe(fire.spanContext().spanId);
    expect(handler.parentSpanContext?.spanId).toBe(attempt.spanContext().spanId);
    // The webhook sees the handler span as its parent.
    expect(headers.traceparent).toBe(`00-${plan.spanContext().traceId}-${handler.spanContext().spanId}-01`);
    expect(plan.resource.attributes).toMatchObject({
      'service.name': 'punctual-test',
      'service.instance.id': 'test-1',
    });
  });

  it('parents a chunk on its first origin and links the others', async () => {
    exporter.reset();
    await tracing.withSpan('plan', {}, async () => tracing.mark([{ id: 'x' }]));
    await tracing.withSpan('plan', {}, async () => tracing.mark([{ id: 'y' }]));
    // The same rows as other objects (read back from the database by a sweep), and one never marked.
    await tracing.withSpan('fire', {}, async () => undefined, {
      follows: [{ id: 'x' }, { id: 'y' }, { id: 'unplanned' }],
    });
    const all = await spans();
    const [planA, planB] = named(all, 'plan');
    const fire = named(all, 'fire')[0]!;
    expect(fire.parentSpanContext?.spanId).toBe(planA!.spanContext().spanId);
    expect(fire.links.map((l) => l.context.spanId)).toEqual([planB!.spanContext().spanId]);
  });

  it('exports no span that was discarded (an idle planning tick), its children still', async () => {
    exporter.reset();
    await tracing.withSpan('idle', {}, async () => {
      tracing.discard();
      await tracing.withSpan('inside', {}, async () => undefined);
    });
    expect((await spans()).map((s) => s.name)).toEqual(['inside']);
  });

  it('marks a span that throws as an error and rethrows', async () => {
    exporter.reset();
    await expect(tracing.withSpan('record', {}, async () => Promise.reject(new Error('refused')))).rejects.toThrow(
      'refused',
    );
    const [record] = await spans();
    expect(record!.status).toMatchObject({ code: 2, message: 'refused' });
    expect(record!.events.map((e) => e.name)).toEqual(['exception']);
  });
});
