import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type HandlerLog, hmacSigner, type TaskHandlerContext } from '@punctual/handlers';

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

export type Route = (res: ServerResponse, req: ReceivedRequest) => void;

/**
 * A real HTTP server on 127.0.0.1 that counts every TCP connection (not just requests), so a test
 * can prove that a refused destination never opened a socket.
 */
export async function startLocalServer(routes: Record<string, Route>) {
  const requests: ReceivedRequest[] = [];
  const state = { connections: 0 };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const received = { method: req.method!, path: req.url!, headers: req.headers, body: Buffer.concat(chunks) };
      requests.push(received);
      const route = routes[received.path.split('?')[0]!];
      if (route) return route(res, received);
      res.statusCode = 404;
      res.end('no such route');
    });
  });
  server.on('connection', () => (state.connections += 1));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: (path: string) => `http://127.0.0.1:${port}${path}`,
    requests,
    get connections() {
      return state.connections;
    },
    reset() {
      requests.length = 0;
      state.connections = 0;
    },
    close: () => {
      // Slow routes never answer: drop their sockets instead of waiting for them.
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export const EXECUTION_ID = '0b7c9a52-4a8e-4f0e-9d55-2f1d3c8e6a10';
export const SECRET = 'test-signing-secret-never-logged';

export interface FakeContextOptions {
  taskTimeoutMs?: number;
  secretFields?: string[];
  signal?: AbortSignal;
}

/** A plain-object `TaskHandlerContext`; `logged` collects every log call for secrecy checks. */
export function fakeContext(
  payload: unknown,
  options: FakeContextOptions = {},
): TaskHandlerContext & { logged: unknown[] } {
  const logged: unknown[] = [];
  const log: HandlerLog = {
    info: (message, fields) => void logged.push(message, fields),
    warn: (message, fields) => void logged.push(message, fields),
    error: (message, fields) => void logged.push(message, fields),
  };
  const task = {
    name: 'http-test',
    handler: 'http',
    timeoutMs: options.taskTimeoutMs ?? 10_000,
    secretFields: options.secretFields ?? [],
  };
  return {
    execution: { id: EXECUTION_ID } as TaskHandlerContext['execution'],
    task: task as TaskHandlerContext['task'],
    sign: hmacSigner(SECRET),
    payload,
    attempt: 1,
    signal: options.signal ?? new AbortController().signal,
    log,
    progress: async () => undefined,
    logged,
  };
}

/** The rejection of `promise`, or a failure if it resolved. */
export async function rejectionOf(promise: Promise<unknown>): Promise<Error> {
  const outcome = await promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
  if (!('error' in outcome)) throw new Error(`expected a rejection, got ${JSON.stringify(outcome.value)}`);
  if (!(outcome.error instanceof Error)) throw new Error(`expected an Error, got ${String(outcome.error)}`);
  return outcome.error;
}
