import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { KNOWN_ENV_NAMES, loadConfig } from '../../libs/config/src/index.js';

/** No Docker engine runs the tests: the file is checked by reading it as Compose would. */
const root = (path: string) => fileURLToPath(new URL(`../../${path}`, import.meta.url));
type Service = {
  image?: string;
  build?: unknown;
  command?: string[] | string;
  environment?: Record<string, string>;
  ports?: (string | { target: number; published: string | number })[];
  volumes?: (string | { type: string; source: string; target: string })[];
  healthcheck?: { test: string[] | string };
  deploy?: { replicas?: number };
  depends_on?: Record<string, { condition: string }> | string[];
  stop_grace_period?: string;
  read_only?: boolean;
  tmpfs?: string[] | string;
};
const compose = parse(readFileSync(root('docker-compose.yml'), 'utf8'), { merge: true }) as {
  services: Record<string, Service>;
  volumes?: Record<string, unknown>;
};
const { services } = compose;
const SCRIPTS = JSON.parse(readFileSync(root('package.json'), 'utf8')).scripts as Record<string, string>;
const APPS = ['api', 'scheduler', 'worker'] as const;

/** `${NAME:-default}` as Compose resolves it with NAME unset. */
const withDefaults = (environment: Record<string, string> = {}) =>
  Object.fromEntries(Object.entries(environment).map(([k, v]) => [k, String(v).replace(/\$\{\w+:-([^}]*)\}/g, '$1')]));
const words = (command: Service['command']) => (Array.isArray(command) ? command : String(command).split(/\s+/));
const seconds = (duration: string) => Number(/^(\d+)s$/.exec(duration)?.[1]);

describe('docker-compose.yml', () => {
  it('has Postgres 16, Redis 7, the migrations and the three roles', () => {
    expect(Object.keys(services).sort()).toEqual(['api', 'migrate', 'postgres', 'redis', 'scheduler', 'worker']);
    expect(services.postgres!.image).toMatch(/^postgres:16(\b|$)/);
    expect(services.redis!.image).toMatch(/^redis:7(\b|$)/);
    for (const name of [...APPS, 'migrate']) {
      expect(services[name]!.image, name).toBe(services.api!.image);
      expect(services[name]!.build, name).toBeDefined();
    }
  });

  it('runs each role with its package.json command: two schedulers (one leads) and two workers', () => {
    for (const role of APPS) expect(words(services[role]!.command), role).toEqual(SCRIPTS[`start:${role}`]!.split(' '));
    expect(services.scheduler!.deploy?.replicas).toBe(2);
    expect(services.worker!.deploy?.replicas).toBe(2);
    expect(services.api!.deploy?.replicas ?? 1).toBe(1);
  });

  it('publishes the API on localhost:3000, and nothing else', () => {
    const published = (s: Service) =>
      (s.ports ?? []).map((p) => (typeof p === 'string' ? p : `${p.published}:${p.target}`));
    expect(published(services.api!)).toEqual(['3000:3000']);
    expect(withDefaults(services.api!.environment).PORT ?? '3000').toBe('3000');
    for (const name of ['postgres', 'redis', 'migrate', 'scheduler', 'worker'])
      expect(published(services[name]!), name).toEqual([]);
  });

  it('runs Redis without eviction and with an append-only file, both on named volumes', () => {
    const command = words(services.redis!.command).join(' ');
    expect(command).toMatch(/--maxmemory-policy noeviction\b/);
    expect(command).toMatch(/--appendonly yes\b/);
    const mounts = (s: Service) =>
      (s.volumes ?? []).map((v) => (typeof v === 'string' ? v.split(':') : [v.source, v.target]));
    expect(mounts(services.postgres!)).toContainEqual([expect.any(String), '/var/lib/postgresql/data']);
    expect(mounts(services.redis!)).toContainEqual([expect.any(String), '/data']);
    for (const [source] of [...mounts(services.postgres!), ...mounts(services.redis!)])
      expect(Object.keys(compose.volumes ?? {})).toContain(source);
  });

  it('checks health everywhere and starts the roles only after Postgres, Redis and the migrations', () => {
    expect(words(services.postgres!.healthcheck!.test).join(' ')).toMatch(/pg_isready/);
    expect(words(services.redis!.healthcheck!.test).join(' ')).toMatch(/redis-cli ping/);
    expect(words(services.migrate!.command)).toEqual(['npx', 'prisma', 'migrate', 'deploy']);
    expect(services.migrate!.depends_on).toEqual({ postgres: { condition: 'service_healthy' } });
    for (const role of APPS) {
      expect(services[role]!.healthcheck?.test, role).toBeTruthy();
      expect(services[role]!.depends_on, role).toEqual({
        postgres: { condition: 'service_healthy' },
        redis: { condition: 'service_healthy' },
        migrate: { condition: 'service_completed_successfully' },
      });
    }
  });

  it('sets only variables libs/config knows (and the postgres image its own), with values it accepts', () => {
    for (const name of [...APPS, 'migrate']) {
      const environment = withDefaults(services[name]!.environment);
      expect(
        Object.keys(environment).filter((n) => !KNOWN_ENV_NAMES.includes(n)),
        name,
      ).toEqual([]);
      expect(() => loadConfig(environment), name).not.toThrow();
    }
    expect(Object.keys(services.postgres!.environment ?? {}).filter((n) => !n.startsWith('POSTGRES_'))).toEqual([]);
    expect(Object.keys(services.redis!.environment ?? {})).toEqual([]);
  });

  it('points every role at these Postgres and Redis services, and has a development ADMIN_API_KEY', () => {
    const pg = services.postgres!.environment!;
    for (const name of [...APPS, 'migrate']) {
      const config = loadConfig(withDefaults(services[name]!.environment));
      const db = new URL(config.databaseUrl);
      expect([db.hostname, db.username, db.password, db.pathname], name).toEqual([
        'postgres',
        pg.POSTGRES_USER,
        pg.POSTGRES_PASSWORD,
        `/${pg.POSTGRES_DB}`,
      ]);
      if (name !== 'migrate') expect(new URL(config.redisUrl).hostname, name).toBe('redis');
    }
    expect(services.api!.environment!.ADMIN_API_KEY).toMatch(/^\$\{ADMIN_API_KEY:-.+\}$/);
    const config = loadConfig(withDefaults(services.api!.environment));
    expect(config.nodeEnv).toBe('production');
    expect(config.adminApiKey).toBeDefined();
  });

  it('stops schedulers and workers gracefully, and runs every image container read-only', () => {
    const config = loadConfig(withDefaults(services.worker!.environment));
    for (const role of ['scheduler', 'worker'])
      expect(seconds(services[role]!.stop_grace_period!) * 1000, role).toBeGreaterThan(config.shutdownGraceMs);
    for (const name of [...APPS, 'migrate']) {
      expect(services[name]!.read_only, name).toBe(true);
      expect([services[name]!.tmpfs].flat(), name).toContain('/tmp');
    }
  });
});

describe('docker-compose.sentinel.yml (with docker-compose.yml)', () => {
  const override = parse(readFileSync(root('docker-compose.sentinel.yml'), 'utf8'), { merge: true }) as {
    services: Record<string, Service>;
    volumes?: Record<string, unknown>;
  };
  const sentinels = Object.keys(override.services).filter((name) => name.startsWith('sentinel-'));
  /** A role's environment as Compose merges the two files: the override's keys over the base's. */
  const merged = (role: string) =>
    withDefaults({ ...services[role]!.environment, ...override.services[role]!.environment });

  it('adds a replica of the redis service and three sentinels monitoring it as the primary', () => {
    expect(sentinels).toHaveLength(3);
    expect(words(override.services['redis-replica']!.command).join(' ')).toMatch(
      /--replicaof redis 6379\b.*--maxmemory-policy noeviction\b.*--appendonly yes\b/,
    );
    for (const name of sentinels) {
      const script = words(override.services[name]!.command).join(' ');
      expect(script, name).toMatch(/sentinel monitor mymaster redis 6379 2/);
      expect(script, name).toMatch(/--sentinel$/);
      expect(words(override.services[name]!.healthcheck!.test).join(' '), name).toMatch(/redis-cli -p 26379 ping/);
    }
    for (const [source] of (override.services['redis-replica']!.volumes ?? []).map((v) => String(v).split(':')))
      expect(Object.keys(override.volumes ?? {})).toContain(source);
  });

  it('has every role reach Redis through those sentinels, after they are healthy', () => {
    for (const role of APPS) {
      const config = loadConfig(merged(role));
      expect(config.redisTopology.kind, role).toBe('sentinel');
      if (config.redisTopology.kind !== 'sentinel') continue;
      expect(config.redisTopology.master, role).toBe('mymaster');
      expect(
        config.redisTopology.sentinels.map((s) => `${s.host}:${s.port}`),
        role,
      ).toEqual(sentinels.map((name) => `${name}:26379`));
      expect(Object.keys(override.services[role]!.depends_on ?? {}).sort(), role).toEqual(sentinels);
    }
  });
});

describe('docker-compose.pgbouncer.yml (with docker-compose.yml)', () => {
  const override = parse(readFileSync(root('docker-compose.pgbouncer.yml'), 'utf8'), { merge: true }) as {
    services: Record<string, Service>;
  };
  const merged = (role: string) =>
    withDefaults({ ...services[role]!.environment, ...override.services[role]!.environment });

  it('runs PgBouncer in transaction mode in front of the postgres service, ending a transaction left idle', () => {
    const env = override.services.pgbouncer!.environment!;
    expect([env.DB_HOST, env.DB_USER, env.DB_PASSWORD, env.POOL_MODE]).toEqual([
      'postgres',
      services.postgres!.environment!.POSTGRES_USER,
      services.postgres!.environment!.POSTGRES_PASSWORD,
      'transaction',
    ]);
    expect(Number(env.IDLE_TRANSACTION_TIMEOUT)).toBeGreaterThan(0);
    expect(override.services.pgbouncer!.depends_on).toEqual({ postgres: { condition: 'service_healthy' } });
  });

  it('sends every role through it with DATABASE_POOLING=transaction, and gives each Postgres itself as DATABASE_DIRECT_URL (the schedulers use it)', () => {
    const port = override.services.pgbouncer!.environment!.LISTEN_PORT;
    for (const role of APPS) {
      const config = loadConfig(merged(role));
      expect(config.databasePooling, role).toBe('transaction');
      expect(new URL(config.databaseUrl).host, role).toBe(`pgbouncer:${port}`);
      expect(new URL(config.databaseDirectUrl!).host, role).toBe('postgres:5432');
      expect(new URL(config.databaseDirectUrl!).pathname, role).toBe(new URL(config.databaseUrl).pathname);
      expect(override.services[role]!.depends_on, role).toEqual({ pgbouncer: { condition: 'service_healthy' } });
    }
    // The migrations keep connecting to Postgres directly (a session-level lock).
    expect(override.services.migrate).toBeUndefined();
  });
});
