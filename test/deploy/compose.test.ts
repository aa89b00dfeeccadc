import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { KNOWN_ENV_NAMES } from '../../libs/config/src/index.js';

const root = (path: string) => fileURLToPath(new URL(`../../${path}`, import.meta.url));
const compose = parse(readFileSync(root('docker-compose.yml'), 'utf8'), { merge: true }) as { services: Record<string, any>; volumes: Record<string, unknown> };
const APPS = ['api', 'scheduler', 'worker'];

describe('docker-compose.yml (no engine here: checked by reading it)', () => {
  it('has every service, with the replicas and ports of DESIGN', () => {
    expect(Object.keys(compose.services).sort()).toEqual(['api', 'migrate', 'postgres', 'redis', 'scheduler', 'worker']);
    expect(compose.services.scheduler.deploy.replicas).toBe(2);
    expect(compose.services.worker.deploy.replicas).toBe(2);
    expect(compose.services.api.ports).toContain('3000:3000');
    expect(compose.services.postgres.image).toMatch(/^postgres:16/);
    expect(compose.services.redis.image).toMatch(/^redis:7/);
  });

  it('runs Redis without eviction and with AOF, Postgres on a named volume', () => {
    const command = compose.services.redis.command.join(' ');
    expect(command).toContain('--maxmemory-policy noeviction');
    expect(command).toContain('--appendonly yes');
    const [volume] = compose.services.postgres.volumes[0].split(':');
    expect(Object.keys(compose.volumes)).toContain(volume);
  });

  it('migrates first, and starts the apps only once everything they need is healthy', () => {
    expect(compose.services.migrate.command).toEqual(['npx', 'prisma', 'migrate', 'deploy']);
    for (const name of APPS) {
      const service = compose.services[name];
      expect(service.healthcheck?.test, name).toBeTruthy();
      expect(service.depends_on, name).toEqual({
        postgres: { condition: 'service_healthy' },
        redis: { condition: 'service_healthy' },
        migrate: { condition: 'service_completed_successfully' },
      });
    }
    for (const name of ['postgres', 'redis']) expect(compose.services[name].healthcheck?.test, name).toBeTruthy();
  });

  it('sets only environment variables the config knows', () => {
    for (const name of [...APPS, 'migrate']) {
      const unknown = Object.keys(compose.services[name].environment).filter((n) => !KNOWN_ENV_NAMES.includes(n));
      expect(unknown, name).toEqual([]);
    }
  });
});

describe('Dockerfile', () => {
  const dockerfile = readFileSync(root('Dockerfile'), 'utf8');
  it('builds in stages on node:20-slim and runs as a non-root user with a health check', () => {
    const stages = dockerfile.match(/^FROM .+$/gm)!;
    expect(stages.length).toBeGreaterThanOrEqual(2);
    expect(stages.every((s) => s.startsWith('FROM node:20-slim'))).toBe(true);
    expect(dockerfile).toMatch(/^USER (?!root|0\b)\S+/m);
    expect(dockerfile).toMatch(/^HEALTHCHECK .+healthcheck\.mjs/m);
    expect(dockerfile).toMatch(/npm ci --omit=dev/);
    expect(dockerfile).toMatch(/npm run build/);
    expect(readFileSync(root('.dockerignore'), 'utf8')).toMatch(/^node_modules$/m);
  });
});
