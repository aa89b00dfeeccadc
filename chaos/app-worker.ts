import 'reflect-metadata';
import { createWorker } from '../libs/worker/src/index.js';

/**
 * A user's application in a chaos run: a plain Node process with `createWorker`, the only one that
 * offers the `app-hook` handler. Its handler calls the run's counting webhook (as the `http` handler
 * does, naming the execution) and returns — or, when the webhook answers an error, throws — text
 * Postgres cannot store as it is: a NUL character and half of a character.
 */
const env = process.env;
const worker = await createWorker({
  databaseUrl: env.DATABASE_URL!,
  redisUrl: env.REDIS_URL!,
  redisPrefix: env.REDIS_PREFIX,
  leaseMs: env.LEASE_MS ? Number(env.LEASE_MS) : undefined,
  concurrency: 20,
  // It offers the built-in handlers too: with the settings the cluster's workers have (the webhook is on loopback).
  env: { HTTP_ALLOW_HOSTS: env.HTTP_ALLOW_HOSTS ?? '' },
  instanceId: env.INSTANCE_ID ?? `app-worker:${process.pid}`,
  // Errors in one line each: a chaos run restarts Postgres and Redis under it on purpose.
  // A line is `(text)`, `(error)` or `({ err, ...fields }, text)`: the text and the error's first line.
  logger: {
    log: () => undefined,
    warn: () => undefined,
    error: (first: unknown, ...rest: unknown[]) => {
      const text = [first, ...rest].find((part) => typeof part === 'string') ?? '';
      const error = first instanceof Error ? first : (first as { err?: unknown } | null)?.err;
      const cause = error instanceof Error ? (error.message.split('\n').find((line) => line.trim()) ?? '') : '';
      console.error(`app worker: ${[text, cause].filter(Boolean).join(': ')}`);
    },
  },
  handlers: {
    'app-hook': async ({ payload, execution, signal }) => {
      const { url } = payload as { url: string };
      const res = await fetch(url, { method: 'POST', headers: { 'x-punctual-execution': execution.id }, signal });
      if (!res.ok) throw new Error(`webhook answered ${res.status}: \u0000 and \ud83d in the error`);
      return { answered: res.status, note: 'a NUL \u0000 and half a character \ud83d' };
    },
  },
});
console.log('app worker ready');
process.once('SIGTERM', () => void worker.close().then(() => process.exit(0)));
