import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalServer } from '../handlers/local-server.js';
import { Cluster } from '../support/cluster.js';
import { exportedMetrics, isExported, observabilityQueries, selectedMetrics } from '../support/promql.js';

/** A span as OTLP/HTTP JSON carries it (ids in hex). */
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes?: { key: string; value: { stringValue?: string; intValue?: string | number } }[];
  service: string;
}

/** A minimal OTLP/HTTP traces receiver: keeps every span posted to /v1/traces, with its service.name. */
async function startTraceReceiver() {
  const spans: OtlpSpan[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const body = JSON.parse((req.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw).toString('utf8'));
      for (const resourceSpans of body.resourceSpans ?? []) {
        const service = resourceSpans.resource?.attributes?.find((a: { key: string }) => a.key === 'service.name')
          ?.value.stringValue;
        for (const scope of resourceSpans.scopeSpans ?? [])
          for (const span of scope.spans ?? []) spans.push({ ...span, service });
      }
      res.writeHead(req.url === '/v1/traces' ? 200 : 404, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    spans,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const attribute = (span: OtlpSpan, key: string) => span.attributes?.find((a) => a.key === key)?.value.stringValue;

/**
 * A real stack (API, scheduler, worker processes) with tracing on: one execution's trace is
 * connected from planning to the webhook, and every query of the dashboard and the alert rules
 * names a metric the services export.
 */
describe('observability of a running stack', () => {
  let cluster: Cluster;
  let receiver: Awaited<ReturnType<typeof startTraceReceiver>>;
  let webhook: Awaited<ReturnType<typeof startLocalServer>>;

  beforeAll(async () => {
    receiver = await startTraceReceiver();
    webhook = await startLocalServer({ '/hook': (res) => res.writeHead(204).end() });
    cluster = await Cluster.start({
      schedulers: 1,
      workers: 1,
      api: true,
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, HTTP_ALLOW_HOSTS: '127.0.0.1' },
    });
    const every = { cron: '*/1 * * * * *' };
    const tasks = [
      { name: 'webhook', handler: 'http', payload: { url: webhook.url('/hook') }, schedule: every },
      { name: 'quiet', handler: 'noop', payload: {}, schedule: every },
      { name: 'broken', handler: 'fail', payload: { unrecoverable: true }, schedule: every },
    ];
    for (const task of tasks) expect((await cluster.call('POST', '/v1/tasks', task)).status).toBe(201);
  });

  afterAll(async () => {
    await cluster?.stop();
    await webhook?.close();
    await receiver?.close();
  });

  it('connects one execution end to end: plan batch → fire chunk → attempt (claim, handler, record) → webhook', async () => {
    const request = await cluster.waitFor(
      async () => webhook.requests.find((r) => r.headers.traceparent),
      20_000,
      'a webhook call with traceparent',
    );
    const [, traceId, parentId] =
      /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(String(request.headers.traceparent)) ?? [];
    expect(traceId, String(request.headers.traceparent)).toBeDefined();
    const executionId = request.headers['x-punctual-execution'];

    const names = [
      'punctual.plan_batch',
      'punctual.fire_chunk',
      'punctual.attempt',
      'punctual.claim',
      'punctual.handler',
      'punctual.record',
    ];
    const trace = await cluster.waitFor(
      async () => {
        const spans = receiver.spans.filter((s) => s.traceId === traceId);
        return names.every((n) => spans.some((s) => s.name === n)) && spans;
      },
      20_000,
      `the spans of trace ${traceId}`,
    );
    const byId = new Map(trace.map((s) => [s.spanId, s]));
    const parentOf = (span: OtlpSpan) => (span.parentSpanId ? byId.get(span.parentSpanId) : undefined);

    // The webhook's parent is the handler span of this execution's attempt.
    const handler = byId.get(parentId!)!;
    expect(handler?.name).toBe('punctual.handler');
    expect(attribute(handler, 'punctual.handler')).toBe('http');
    const attempt = parentOf(handler)!;
    expect(attempt.name).toBe('punctual.attempt');
    expect(attribute(attempt, 'punctual.execution.id')).toBe(executionId);
    expect(attribute(attempt, 'punctual.task')).toBe('webhook');
    expect(
      trace
        .filter((s) => s.name !== 'punctual.attempt' && parentOf(s) === attempt)
        .map((s) => s.name)
        .sort(),
    ).toEqual(expect.arrayContaining(['punctual.claim', 'punctual.handler', 'punctual.record']));
    // Across the queue: the attempt (worker) continues the fire chunk (scheduler), which continues its plan batch.
    const fire = parentOf(attempt)!;
    expect(fire.name).toBe('punctual.fire_chunk');
    const plan = parentOf(fire)!;
    expect(plan.name).toBe('punctual.plan_batch');
    expect(plan.parentSpanId ?? '').toBe('');
    expect([plan.service, fire.service, attempt.service, handler.service]).toEqual([
      'punctual-scheduler',
      'punctual-scheduler',
      'punctual-worker',
      'punctual-worker',
    ]);
  });

  it('exports every metric the dashboard and the alert rules query', async () => {
    // Something of each kind has happened: runs succeeded and a run ended dead.
    await cluster.waitFor(
      async () => (await cluster.executionsOf('broken')).some((e) => e.status === 'dead'),
      20_000,
      'a dead letter',
    );
    await cluster.waitFor(
      async () => (await cluster.executionsOf('quiet')).some((e) => e.status === 'succeeded'),
      20_000,
      'a success',
    );
    const token = { authorization: `Bearer ${cluster.sandbox.env().ADMIN_API_KEY}` };
    const apps = [cluster.api!, ...cluster.schedulers, ...cluster.workers];
    const scrapes = await Promise.all(
      apps.map(async (app) => {
        const res = await fetch(`${app.url}/metrics`, { headers: app.role === 'api' ? token : {} });
        expect(res.status, app.role).toBe(200);
        return res.text();
      }),
    );
    const families = exportedMetrics(scrapes.join('\n'));

    const unexported = observabilityQueries().flatMap(({ where, expr }) =>
      selectedMetrics(expr)
        .filter((name) => !isExported(name, families))
        .map((name) => `${where}: ${name}`),
    );
    expect(unexported).toEqual([]);
    // And the new series are fed, not only declared.
    const [, scheduler, worker] = scrapes;
    expect(scheduler).toMatch(/^punctual_fired_total [1-9]/m);
    expect(scheduler).toMatch(/^punctual_redis_maxmemory_policy\{policy="[a-z-]+"\} 1$/m);
    expect(scheduler).toMatch(/^punctual_dead_letters \d+$/m);
    expect(worker).toMatch(/^punctual_worker_running\{worker="[^"]+"\} \d+$/m);
    expect(worker).toMatch(/^punctual_worker_concurrency\{worker="[^"]+"\} 50$/m);
    // Every best-effort site has its series from the start, in every process (a failure's first increase is seen).
    for (const scrape of scrapes)
      expect(scrape).toMatch(/^punctual_best_effort_failures_total\{site="worker\.announce"\} \d+$/m);
  });
});
