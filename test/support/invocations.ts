import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request the `http` handler made: a handler invocation, seen from outside Punctual. */
export interface Invocation {
  executionId: string;
  /** The path and query called: which definition of the task made the call. */
  url: string;
  /** When it arrived. */
  at: number;
  /** What this server answers it. */
  status: number;
  /** When its connection closed: answered, or given up by the caller (an aborted handler). Null while open. */
  endedAt: number | null;
  /** The caller closed the connection before the answer (its handler was aborted, or its worker died). */
  aborted: boolean;
}

/**
 * A counting HTTP endpoint on 127.0.0.1: what a user of Punctual would count — how many times their
 * webhook was called for each execution (the `http` handler sends `X-Punctual-Execution`). Tasks
 * point their `http` payload at {@link url}; the query may ask for `delay=<ms>` before answering and
 * `failFirst=<n>` (answer 500 to the first n calls of each execution, so attempts are retried), and
 * may carry anything else (`v=<n>`, say) to tell one definition of a task from another.
 */
export class Invocations {
  readonly calls: Invocation[] = [];
  private readonly seen = new Map<string, number>();

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  static async start(): Promise<Invocations> {
    let self: Invocations | null = null;
    const server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        const call = self!.answer(req.url ?? '/', String(req.headers['x-punctual-execution'] ?? ''), (status) => {
          res.statusCode = status;
          res.end();
        });
        res.on('close', () => {
          call.endedAt = Date.now();
          call.aborted = !res.writableFinished;
        });
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    self = new Invocations(server, (server.address() as AddressInfo).port);
    return self;
  }

  /** The URL an `http` task calls; `options` become the query this server obeys. */
  url(options: { delay?: number; failFirst?: number; v?: number } = {}): string {
    const query = new URLSearchParams(
      Object.entries(options).map(([k, v]): [string, string] => [k, String(v)]),
    ).toString();
    return `http://127.0.0.1:${this.port}/hit${query ? `?${query}` : ''}`;
  }

  /** Successful calls (2xx) per execution id. */
  succeededBy(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const call of this.calls)
      if (call.status < 300) counts.set(call.executionId, (counts.get(call.executionId) ?? 0) + 1);
    return counts;
  }

  /** Every call per execution id, whatever it was answered. */
  callsBy(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const call of this.calls) counts.set(call.executionId, (counts.get(call.executionId) ?? 0) + 1);
    return counts;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private answer(url: string, executionId: string, reply: (status: number) => void): Invocation {
    const query = new URL(url, 'http://local').searchParams;
    const nth = (this.seen.get(executionId) ?? 0) + 1;
    this.seen.set(executionId, nth);
    const status = nth <= Number(query.get('failFirst') ?? 0) ? 500 : 200;
    // Counted on arrival: the side effect happened even if the caller dies before the answer.
    const call: Invocation = { executionId, url, at: Date.now(), status, endedAt: null, aborted: false };
    this.calls.push(call);
    setTimeout(() => reply(status), Number(query.get('delay') ?? 0));
    return call;
  }
}

/** The most calls the webhook had open at once (an end and a start at the same millisecond: the end first, its permit given back). */
export function mostAtOnce(calls: Invocation[]): number {
  const edges = calls.flatMap((c) => [
    { at: c.at, d: 1 },
    { at: c.endedAt ?? Number.POSITIVE_INFINITY, d: -1 },
  ]);
  edges.sort((a, b) => a.at - b.at || a.d - b.d);
  let open = 0;
  let most = 0;
  for (const e of edges) most = Math.max(most, (open += e.d));
  return most;
}

/** The most of `instants` within any window of `ms`. */
export function mostWithin(instants: number[], ms: number): number {
  const at = [...instants].sort((a, b) => a - b);
  let most = 0;
  for (let i = 0, j = 0; j < at.length; j += 1) {
    while (at[j]! - at[i]! >= ms) i += 1;
    most = Math.max(most, j - i + 1);
  }
  return most;
}

/** A one-off task of the `http` handler calling `url` at `at`, with `policy`. */
export const oneOffCalling = (name: string, url: string, at: Date, policy: object = {}) => ({
  name,
  handler: 'http',
  payload: { url },
  schedule: { at: at.toISOString() },
  policy,
});
