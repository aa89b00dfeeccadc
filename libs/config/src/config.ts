import { configSchema, KNOWN_ENV_NAMES, type RawConfig } from './config.schema.js';

/** Punctual's configuration: read from the environment once, validated, frozen. */
export interface Config {
  readonly nodeEnv: 'development' | 'production' | 'test';
  readonly databaseUrl: string;
  /** Whether DATABASE_URL goes through a pooler in transaction mode: no session settings, no named statements on it. */
  readonly databasePooling: 'session' | 'transaction';
  /** Postgres itself (DATABASE_DIRECT_URL), past any pooler; set whenever `databasePooling` is `transaction`. */
  readonly databaseDirectUrl: string | undefined;
  /** REDIS_URL: the Redis itself, or only its credentials, database and TLS behind Sentinel or as a Redis Cluster. */
  readonly redisUrl: string;
  /** How the Redis is reached: one server, its primary through Sentinel, or a Redis Cluster. */
  readonly redisTopology: RedisTopology;
  readonly redisPrefix: string;
  readonly port: number;
  readonly healthPort: number;
  /** The address the API, and the schedulers' and workers' health and metrics, listen on. */
  readonly host: string;
  readonly adminApiKey: string | undefined;
  readonly metricsToken: string | undefined;
  readonly instanceId: string;
  readonly leaderTtlMs: number;
  /** How many shards the tasks are split into, each with its own leader; fixed per cluster (stored in Postgres). */
  readonly schedulerShards: number;
  readonly lookaheadMs: number;
  readonly planTickMs: number;
  /** How long before its `fire_at` a job is pushed; the worker holds it until `fire_at`. */
  readonly fireLeadMs: number;
  readonly leaseMs: number;
  readonly workerConcurrency: number;
  /** Connections of the process's Postgres pool; a worker's lease renewals use one more of their own. */
  readonly dbPoolSize: number;
  readonly shutdownGraceMs: number;
  readonly catchupMax: number;
  /**
   * Backlog runs (catch-ups, backfills) released a second, cluster-wide (each shard leader its
   * share), round-robin across namespaces; slots on their schedule are never held by it.
   */
  readonly catchupRate: number;
  /** Ended executions and their events are kept this long past their slot (HISTORY_RETENTION); a namespace may set its own. */
  readonly historyRetentionMs: number;
  /** Dead letters are kept, listed and replayable, this long past their slot (DEAD_LETTER_RETENTION). */
  readonly deadLetterRetentionMs: number;
  /** Audit entries and task versions are kept this long, the latest of each task aside (AUDIT_RETENTION). */
  readonly auditRetentionMs: number;
  /** How often shard 0's leader runs the history pass (HISTORY_PASS_MS). */
  readonly historyPassMs: number;
  /** How long past its `fire_at` (a retry: its due instant) an execution may wait for a worker before the relay checks its job exists. */
  readonly relayGraceMs: number;
  readonly httpAllowHosts: readonly string[];
  /** Flow-control keys with a `key` label in the metrics: these, and the busiest `flowMetricsTop` others (bounded cardinality). */
  readonly flowMetricsKeys: readonly string[];
  readonly flowMetricsTop: number;
  /** Whether a worker offers the built-in `http`, `noop` and `log` handlers (WORKER_BUILTIN_HANDLERS). */
  readonly builtinHandlers: boolean;
  /** Whether workers register the `sleep` and `fail` handlers (tests and benchmarks only; off by default). */
  readonly enableTestHandlers: boolean;
  readonly logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** Where spans are sent (OTLP over HTTP); undefined leaves tracing off. */
  readonly otlpEndpoint: string | undefined;
}

export interface HostPort {
  readonly host: string;
  readonly port: number;
}

/** How a process reaches Redis (REDIS_URL, REDIS_SENTINELS, REDIS_CLUSTER_NODES). */
export type RedisTopology =
  | { readonly kind: 'single' }
  | {
      readonly kind: 'sentinel';
      readonly sentinels: readonly HostPort[];
      readonly master: string;
      readonly sentinelPassword: string | undefined;
    }
  | { readonly kind: 'cluster'; readonly nodes: readonly HostPort[] };

/** A bad environment: its message is one line naming the variable and what it expected. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/**
 * Validates `env` (by default `process.env`) into a frozen {@link Config}. Empty strings count as
 * unset so that `FOO=` in a manifest falls back to the default.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const input: Record<string, string> = {};
  for (const name of KNOWN_ENV_NAMES) {
    const value = env[name];
    if (value !== undefined && value !== '') input[name] = value;
  }
  const parsed = configSchema.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const name = String(issue.path[0] ?? 'environment');
    const shown = input[name] === undefined || /KEY|TOKEN|URL|PASSWORD/.test(name) ? '' : ` (got "${input[name]}")`;
    throw new ConfigError(`Invalid configuration: ${name} ${issue.message}${shown}`);
  }
  const c = parsed.data;
  return Object.freeze({
    nodeEnv: c.NODE_ENV,
    databaseUrl: c.DATABASE_URL,
    databasePooling: c.DATABASE_POOLING,
    databaseDirectUrl: c.DATABASE_DIRECT_URL,
    redisUrl: c.REDIS_URL,
    redisTopology: redisTopology(c),
    redisPrefix: c.REDIS_PREFIX ?? (c.REDIS_CLUSTER_NODES ? '{punctual}' : 'punctual'),
    port: c.PORT,
    healthPort: c.HEALTH_PORT,
    // A development machine keeps its API to itself; an image or a pod listens on every interface.
    host: c.HOST ?? (c.NODE_ENV === 'development' ? '127.0.0.1' : '0.0.0.0'),
    adminApiKey: c.ADMIN_API_KEY,
    metricsToken: c.METRICS_TOKEN,
    instanceId: c.INSTANCE_ID,
    leaderTtlMs: c.LEADER_TTL_MS,
    schedulerShards: c.SCHEDULER_SHARDS,
    lookaheadMs: c.LOOKAHEAD_MS,
    planTickMs: c.PLAN_TICK_MS,
    fireLeadMs: c.FIRE_LEAD_MS,
    leaseMs: c.LEASE_MS,
    workerConcurrency: c.WORKER_CONCURRENCY,
    dbPoolSize: c.DB_POOL_SIZE,
    shutdownGraceMs: c.SHUTDOWN_GRACE_MS,
    catchupMax: c.CATCHUP_MAX,
    catchupRate: c.CATCHUP_RATE,
    relayGraceMs: c.RELAY_GRACE_MS,
    historyRetentionMs: c.HISTORY_RETENTION,
    deadLetterRetentionMs: c.DEAD_LETTER_RETENTION,
    auditRetentionMs: c.AUDIT_RETENTION,
    historyPassMs: c.HISTORY_PASS_MS,
    httpAllowHosts: Object.freeze([...c.HTTP_ALLOW_HOSTS]),
    flowMetricsKeys: Object.freeze([...c.FLOW_METRICS_KEYS]),
    flowMetricsTop: c.FLOW_METRICS_TOP,
    builtinHandlers: c.WORKER_BUILTIN_HANDLERS,
    enableTestHandlers: c.ENABLE_TEST_HANDLERS,
    logLevel: c.LOG_LEVEL,
    otlpEndpoint: c.OTEL_EXPORTER_OTLP_ENDPOINT,
  });
}

function redisTopology(c: RawConfig): RedisTopology {
  if (c.REDIS_SENTINELS) {
    return Object.freeze({
      kind: 'sentinel',
      sentinels: Object.freeze(c.REDIS_SENTINELS),
      master: c.REDIS_SENTINEL_MASTER!,
      sentinelPassword: c.REDIS_SENTINEL_PASSWORD,
    });
  }
  if (c.REDIS_CLUSTER_NODES) return Object.freeze({ kind: 'cluster', nodes: Object.freeze(c.REDIS_CLUSTER_NODES) });
  return Object.freeze({ kind: 'single' });
}

/**
 * Loads the config for a process entry point: on a bad value prints the one-line reason and exits
 * with status 78 (EX_CONFIG) instead of a stack trace.
 */
export function loadConfigOrExit(env: NodeJS.ProcessEnv = process.env): Config {
  try {
    return loadConfig(env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${error.message}\n`);
    process.exit(78);
  }
}
