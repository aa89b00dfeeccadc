import { hostname } from 'node:os';
import { z } from 'zod';

/** The most shards a cluster may have (`SCHEDULER_SHARDS`): the shard leaders of one process are as many. */
export const MAX_SHARDS = 256;

const int = (fallback: number, min: number, max = Number.MAX_SAFE_INTEGER) =>
  z.coerce
    .number({ error: 'must be a whole number' })
    .int('must be a whole number')
    .min(min, `must be at least ${min}`)
    .max(max, `must be at most ${max}`)
    .default(fallback);

const anyUrl = (protocols: string[]) =>
  z.string().refine(
    (value) => {
      try {
        return protocols.includes(new URL(value).protocol);
      } catch {
        return false; // not a URL: the refinement's message names the variable and what it expected
      }
    },
    `must be a URL starting with ${protocols.map((p) => `${p}//`).join(' or ')}`,
  );

const url = (protocols: string[], fallback: string) => anyUrl(protocols).default(fallback);

const HOUR_MS = 3_600_000;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: HOUR_MS, d: 24 * HOUR_MS };

/** A retention: a duration such as `30d` or `12h` (or whole milliseconds), at least an hour, as milliseconds. */
const retention = (fallback: string) =>
  z
    .string()
    .default(fallback)
    .transform((value) => {
      const match = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/.exec(value.trim());
      return match ? Math.round(Number(match[1]) * UNIT_MS[match[2] ?? 'ms']!) : Number.NaN;
    })
    .refine((ms) => Number.isSafeInteger(ms), 'must be a duration such as "30d", "12h" or "90m"')
    .refine((ms) => ms >= HOUR_MS, 'must be at least 1h: no row a slot can still need is ever pruned')
    .refine((ms) => ms <= 100 * 365 * 24 * HOUR_MS, 'must be at most 36500d');

/** A comma-separated list of `host:port` (a Sentinel's or a Redis Cluster node's address). */
const hostPorts = z
  .string()
  .transform((value) =>
    value
      .split(',')
      .map((item) => item.trim())
      .filter(Boolean),
  )
  .refine(
    (items) =>
      items.length > 0 &&
      items.length <= 64 &&
      items.every((item) => /^[0-9A-Za-z._-]{1,253}:\d{1,5}$/.test(item) && Number(item.split(':')[1]) <= 65535),
    'must list host:port addresses, comma-separated (e.g. sentinel-0:26379,sentinel-1:26379)',
  )
  .transform((items) => items.map((item) => ({ host: item.split(':')[0]!, port: Number(item.split(':')[1]) })));

/** Every environment variable Punctual reads, with its default. The manifests may set only these. */
export const configSchema = z
  .object({
    NODE_ENV: z.enum(['development', 'production', 'test']).default('production'),
    DATABASE_URL: url(['postgresql:', 'postgres:'], 'postgresql://postgres@127.0.0.1:5432/punctual'),
    /** `transaction`: DATABASE_URL goes through a pooler in transaction mode (PgBouncer `pool_mode=transaction`). */
    DATABASE_POOLING: z
      .enum(['session', 'transaction'], { error: 'must be session or transaction' })
      .default('session'),
    /** Postgres itself, not a pooler: the schedulers (their fencing needs session settings) and the migrations use it. */
    DATABASE_DIRECT_URL: anyUrl(['postgresql:', 'postgres:']).optional(),
    REDIS_URL: url(['redis:', 'rediss:'], 'redis://127.0.0.1:6379'),
    /** Sentinels that know the Redis primary (REDIS_SENTINEL_MASTER); REDIS_URL then gives only its credentials, database and TLS. */
    REDIS_SENTINELS: hostPorts.optional(),
    REDIS_SENTINEL_MASTER: z
      .string()
      .regex(/^[A-Za-z0-9_.-]{1,200}$/, 'must be the name the sentinels monitor the primary by, e.g. mymaster')
      .optional(),
    REDIS_SENTINEL_PASSWORD: z.string().min(1).optional(),
    /** Nodes of a Redis Cluster to start from; REDIS_URL then gives only the credentials and TLS. */
    REDIS_CLUSTER_NODES: hostPorts.optional(),
    /** Unset: `punctual`, or `{punctual}` with REDIS_CLUSTER_NODES (a hash tag: every key in one slot). */
    REDIS_PREFIX: z
      .string()
      .regex(/^[A-Za-z0-9_{}.-]{1,64}$/, 'must be 1-64 characters of letters, digits, _ . - { }')
      .optional(),
    PORT: int(3000, 0, 65535),
    /** The address every role listens on; unset: 127.0.0.1 in development, 0.0.0.0 otherwise. */
    HOST: z
      .string()
      .regex(/^[0-9A-Za-z.:-]{1,253}$/, 'must be an IP address or a host name, e.g. 0.0.0.0 or 127.0.0.1')
      .optional(),
    HEALTH_PORT: int(8081, 0, 65535),
    ADMIN_API_KEY: z.string().min(16, 'must be at least 16 characters').optional(),
    METRICS_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
    INSTANCE_ID: z.string().min(1).max(200).default(`${hostname()}:${process.pid}`),
    LEADER_TTL_MS: int(5000, 500, 600_000),
    SCHEDULER_SHARDS: int(1, 1, MAX_SHARDS),
    LOOKAHEAD_MS: int(2000, 0, 3_600_000),
    PLAN_TICK_MS: int(250, 10, 60_000),
    FIRE_LEAD_MS: int(50, 0, 1000),
    LEASE_MS: int(30_000, 1000, 86_400_000),
    WORKER_CONCURRENCY: int(50, 1, 10_000),
    /** Postgres connections of a process's pool (a worker keeps one more, its own, for its leases). */
    DB_POOL_SIZE: int(10, 2, 1_000),
    SHUTDOWN_GRACE_MS: int(25_000, 0, 3_600_000),
    CATCHUP_MAX: int(100, 1, 100_000),
    CATCHUP_RATE: int(200, 1, 1_000_000),
    RELAY_GRACE_MS: int(5_000, 100, 3_600_000),
    /** How long ended executions and their events are kept, by slot (a namespace may set its own). */
    HISTORY_RETENTION: retention('30d'),
    /** How long dead letters stay listed and replayable, by slot (a namespace may set its own). */
    DEAD_LETTER_RETENTION: retention('90d'),
    /** How long audit entries and task versions are kept (the latest of each stays). */
    AUDIT_RETENTION: retention('365d'),
    /** How often shard 0's leader runs the history pass (partitions ahead, the live horizon, pruning). */
    HISTORY_PASS_MS: int(60_000, 1000, 86_400_000),
    HTTP_ALLOW_HOSTS: z
      .string()
      .default('')
      .transform((value) =>
        value
          .split(',')
          .map((host) => host.trim().toLowerCase())
          .filter(Boolean),
      ),
    /** Flow-control keys always exported as metrics (comma-separated); the busiest FLOW_METRICS_TOP others are too. */
    FLOW_METRICS_KEYS: z
      .string()
      .default('')
      .transform((value) =>
        value
          .split(',')
          .map((key) => key.trim())
          .filter(Boolean),
      )
      .refine(
        (keys) => keys.length <= 100 && keys.every((key) => key.length <= 200),
        'must list at most 100 keys of at most 200 characters',
      ),
    FLOW_METRICS_TOP: int(10, 0, 100),
    /**
     * Whether a worker offers the built-in handlers `http`, `noop` and `log`: on for Punctual's own
     * worker; a worker embedded in an application (createWorker, PunctualWorkerModule) has it off
     * unless told (`builtinHandlers: true`).
     */
    WORKER_BUILTIN_HANDLERS: z
      .enum(['true', 'false'], { error: 'must be true or false' })
      .default('true')
      .transform((value) => value === 'true'),
    /** Registers the `sleep` and `fail` handlers, for tests and benchmarks; a production worker offers neither. */
    ENABLE_TEST_HANDLERS: z
      .enum(['true', 'false'], { error: 'must be true or false' })
      .default('false')
      .transform((value) => value === 'true'),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    /** OTLP/HTTP collector base URL; traces go to `<url>/v1/traces`. Unset: tracing is off. */
    OTEL_EXPORTER_OTLP_ENDPOINT: anyUrl(['http:', 'https:']).optional(),
  })
  .superRefine((c, ctx) => {
    // Rules between variables, each reported under the variable to change.
    const issue = (name: string, message: string) => ctx.addIssue({ code: 'custom', path: [name], message });
    if (c.DATABASE_POOLING === 'transaction' && !c.DATABASE_DIRECT_URL) {
      issue(
        'DATABASE_DIRECT_URL',
        'must be set with DATABASE_POOLING=transaction: the schedulers and the migrations need a session of their own, past the pooler',
      );
    }
    if (c.REDIS_SENTINELS && c.REDIS_CLUSTER_NODES)
      issue(
        'REDIS_CLUSTER_NODES',
        'must not be set with REDIS_SENTINELS: the Redis is either behind Sentinel or a Redis Cluster',
      );
    if (c.REDIS_SENTINELS && !c.REDIS_SENTINEL_MASTER)
      issue('REDIS_SENTINEL_MASTER', 'must be set with REDIS_SENTINELS: the name the sentinels monitor the primary by');
    if (!c.REDIS_SENTINELS && (c.REDIS_SENTINEL_MASTER || c.REDIS_SENTINEL_PASSWORD)) {
      issue(
        c.REDIS_SENTINEL_MASTER ? 'REDIS_SENTINEL_MASTER' : 'REDIS_SENTINEL_PASSWORD',
        'is read only with REDIS_SENTINELS, which is not set',
      );
    }
    if (c.REDIS_CLUSTER_NODES && c.REDIS_PREFIX !== undefined && hashTagOf(c.REDIS_PREFIX) === null) {
      issue(
        'REDIS_PREFIX',
        'must hold a hash tag such as {punctual} with REDIS_CLUSTER_NODES, so that every key Punctual writes is in one slot',
      );
    }
  });

/**
 * The hash tag Redis Cluster hashes a key starting with `prefix` by, as Redis finds it: what lies
 * between the first `{` and the first `}` after it, when that is not empty. Null when the prefix
 * holds none — then a key is hashed whole (`{}{x}` too: its first tag is empty).
 */
export function hashTagOf(prefix: string): string | null {
  const open = prefix.indexOf('{');
  if (open < 0) return null;
  const close = prefix.indexOf('}', open + 1);
  return close > open + 1 ? prefix.slice(open + 1, close) : null;
}

export type RawConfig = z.output<typeof configSchema>;

/** The names of every environment variable the config reads. */
export const KNOWN_ENV_NAMES: readonly string[] = Object.freeze(Object.keys(configSchema.shape));
