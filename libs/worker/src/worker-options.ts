import { type Config, ConfigError, loadConfig } from '@punctual/config';
import type { HandlerMap } from '@punctual/handlers';

/**
 * How a worker embedded in another app runs. Only the two URLs are required; every other setting
 * has the built-in worker's default. The host's environment is not read (its PORT or LOG_LEVEL are
 * its own); pass `env` to set the other settings under their usual names (HTTP_ALLOW_HOSTS, …).
 */
export interface PunctualWorkerOptions {
  /** Postgres of the Punctual cluster (DATABASE_URL). */
  databaseUrl: string;
  /** Redis of the Punctual cluster (REDIS_URL). */
  redisUrl: string;
  /** The cluster's Redis key prefix (REDIS_PREFIX, default `punctual`). */
  redisPrefix?: string;
  /** Handlers run at once by this process (WORKER_CONCURRENCY, default 50). */
  concurrency?: number;
  /** How long a claim lasts without a renewal (LEASE_MS, default 30 s). */
  leaseMs?: number;
  /** How long running handlers may finish at shutdown before they are aborted (SHUTDOWN_GRACE_MS, default 25 s). */
  shutdownGraceMs?: number;
  /** This process's name in the cluster view (INSTANCE_ID, default host:pid). */
  instanceId?: string;
  /** Handlers by name, added to the discovered `@TaskHandler` providers. */
  handlers?: HandlerMap;
  /**
   * Whether this worker also offers the built-in handlers `http`, `noop` and `log`
   * (WORKER_BUILTIN_HANDLERS; default false: it runs only the app's own handlers).
   */
  builtinHandlers?: boolean;
  /** Further settings by their variable names, as the built-in worker reads them (default none). */
  env?: NodeJS.ProcessEnv;
}

/** Each option and the variable it stands for: a bad value is reported under the option's name. */
const OPTION_VARIABLES = {
  databaseUrl: 'DATABASE_URL',
  redisUrl: 'REDIS_URL',
  redisPrefix: 'REDIS_PREFIX',
  concurrency: 'WORKER_CONCURRENCY',
  leaseMs: 'LEASE_MS',
  shutdownGraceMs: 'SHUTDOWN_GRACE_MS',
  instanceId: 'INSTANCE_ID',
  builtinHandlers: 'WORKER_BUILTIN_HANDLERS',
} as const satisfies Partial<Record<keyof PunctualWorkerOptions, string>>;

/** The worker {@link Config} of `options`; a bad option throws a {@link ConfigError} naming it. */
export function workerConfig(options: PunctualWorkerOptions): Config {
  const env: NodeJS.ProcessEnv = { ...options.env };
  for (const [option, variable] of Object.entries(OPTION_VARIABLES)) {
    const value = options[option as keyof typeof OPTION_VARIABLES];
    if (value !== undefined) env[variable] = String(value);
  }
  // An app's worker runs the app's handlers; the built-in ones only when asked.
  env.WORKER_BUILTIN_HANDLERS ??= 'false';
  try {
    return loadConfig(env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    const named = Object.entries(OPTION_VARIABLES).reduce(
      (message, [option, variable]) => message.replace(` ${variable} `, ` ${option} (${variable}) `),
      error.message,
    );
    throw new ConfigError(`PunctualWorkerModule: ${named}`);
  }
}
