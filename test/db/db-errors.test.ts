import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  isConnectionError,
  isForeignKeyViolation,
  isLockTimeout,
  isUniqueViolation,
  PrismaClient,
} from '../../libs/db/src/index.js';
import { createSandbox, type Sandbox } from '../support/isolation.js';
import { freePort } from '../support/processes.js';
import { TcpProxy } from '../support/tcp-proxy.js';

/**
 * The errors a failed statement really throws — through Prisma and its pg adapter, and through the
 * pool directly (a worker's batched claims) — read by their codes: a lock timeout, a session
 * Postgres ended, a connection cut under a statement, a server that cannot be reached; and errors
 * of the statement itself, which are neither.
 */
describe('reading database errors', () => {
  let sandbox: Sandbox;
  let holder: pg.Client;
  const opened: { end(): Promise<void> }[] = [];

  /** A Prisma client over its own pool (with `options`), and the pool. */
  function connect(url: string, options = ''): { prisma: PrismaClient; pool: pg.Pool } {
    const pool = new pg.Pool({ connectionString: url, options, max: 2 });
    // A pool whose connections are cut reports them here; the statements' errors are what is read.
    pool.on('error', () => {});
    const prisma = new PrismaClient({ adapter: new PrismaPg(pool) });
    opened.push({ end: () => prisma.$disconnect() }, { end: () => pool.end().catch(() => {}) });
    return { prisma, pool };
  }

  /** The error `statement` fails with. */
  async function failure(statement: Promise<unknown>): Promise<unknown> {
    return statement.then(
      () => expect.unreachable('the statement succeeded'),
      (error: unknown) => error,
    );
  }

  beforeAll(async () => {
    sandbox = await createSandbox();
    holder = new pg.Client({ connectionString: sandbox.databaseUrl });
    await holder.connect();
    await holder.query('CREATE TABLE probe (id int PRIMARY KEY, v int); INSERT INTO probe VALUES (1, 0)');
  });
  afterAll(async () => {
    for (const o of opened.reverse()) await o.end();
    await holder?.end();
    await sandbox?.dispose();
  });

  it('a lock timeout, through every way a statement is sent', async () => {
    const { prisma, pool } = connect(sandbox.databaseUrl, '-c lock_timeout=100');
    await holder.query('BEGIN');
    await holder.query('SELECT 1 FROM probe WHERE id = 1 FOR UPDATE');
    try {
      const errors = [
        await failure(prisma.$queryRaw`UPDATE probe SET v = 1 WHERE id = 1 RETURNING v`),
        await failure(prisma.$executeRaw`UPDATE probe SET v = 1 WHERE id = 1`),
        await failure(prisma.$transaction(async (tx) => tx.$executeRaw`UPDATE probe SET v = 1 WHERE id = 1`)),
        await failure(pool.query('UPDATE probe SET v = 1 WHERE id = 1')),
      ];
      expect(errors.map(isLockTimeout)).toEqual([true, true, true, true]);
      expect(errors.map(isConnectionError)).toEqual([false, false, false, false]);
    } finally {
      await holder.query('ROLLBACK');
    }
  });

  it('neither, for a statement that is wrong in itself', async () => {
    const { prisma, pool } = connect(sandbox.databaseUrl);
    const errors = [
      await failure(prisma.$executeRaw`INSERT INTO probe VALUES (1, 0)`),
      await failure(prisma.$queryRawUnsafe('SELECT * FROM no_such_table')),
      await failure(pool.query('SELECT 1/0')),
      new Error('Connection terminated unexpectedly, said a handler'),
    ];
    expect(errors.map(isLockTimeout)).toEqual([false, false, false, false]);
    expect(errors.map(isConnectionError)).toEqual([false, false, false, false]);
  });

  it('a unique and a foreign-key violation, through Prisma (raw and a model) and the pool', async () => {
    const { prisma, pool } = connect(sandbox.databaseUrl);
    await holder.query('CREATE TABLE IF NOT EXISTS probe_child (id int PRIMARY KEY, parent int REFERENCES probe (id))');
    const unique = [
      await failure(prisma.$executeRaw`INSERT INTO probe VALUES (1, 0)`),
      await failure(prisma.$transaction(async (tx) => tx.$executeRaw`INSERT INTO probe VALUES (1, 0)`)),
      await failure(pool.query('INSERT INTO probe VALUES (1, 0)')),
      // A model's create: Prisma's own code (P2002), as a task's create meets a name taken.
      await failure(prisma.namespace.createMany({ data: [{ name: 'dup' }, { name: 'dup' }] })),
    ];
    const foreign = [
      await failure(prisma.$executeRaw`INSERT INTO probe_child VALUES (1, 99)`),
      await failure(pool.query('INSERT INTO probe_child VALUES (1, 99)')),
    ];
    expect(unique.map(isUniqueViolation)).toEqual([true, true, true, true]);
    expect(unique.map(isForeignKeyViolation)).toEqual([false, false, false, false]);
    expect(foreign.map(isForeignKeyViolation)).toEqual([true, true]);
    expect(foreign.map(isUniqueViolation)).toEqual([false, false]);
    const neither = await failure(pool.query('SELECT 1/0'));
    expect([isUniqueViolation(neither), isForeignKeyViolation(neither)]).toEqual([false, false]);
  });

  it('a connection error when Postgres ends the session under a statement', async () => {
    const { prisma, pool } = connect(sandbox.databaseUrl);
    const terminate = async (marker: string) => {
      for (;;) {
        const { rows } = await holder.query(
          `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE query LIKE $1 AND pid <> pg_backend_pid()`,
          [`%${marker}%`],
        );
        if (rows[0].n > 0) return;
      }
    };
    const errors = [];
    for (const [marker, statement] of [
      ['probe_a', () => prisma.$queryRawUnsafe(`SELECT pg_sleep(5)::text AS probe_a`)],
      ['probe_b', () => prisma.$transaction(async (tx) => tx.$queryRawUnsafe(`SELECT pg_sleep(5)::text AS probe_b`))],
      ['probe_c', () => pool.query(`SELECT pg_sleep(5) AS probe_c`)],
    ] as const) {
      const failed = failure(statement());
      await terminate(marker);
      errors.push(await failed);
    }
    expect(errors.map(isConnectionError)).toEqual([true, true, true]);
    expect(errors.map(isLockTimeout)).toEqual([false, false, false]);
  });

  it('a connection error when the network drops the connection under a statement', async () => {
    const proxy = await TcpProxy.start({ host: '127.0.0.1', port: Number(new URL(sandbox.databaseUrl).port || 5432) });
    opened.push({ end: () => proxy.close() });
    const { prisma, pool } = connect(proxy.urlFor(sandbox.databaseUrl));
    const errors = [];
    for (const marker of ['probe_d', 'probe_e']) {
      const dropped = proxy.dropAnswerTo(marker);
      const failed = failure(
        marker === 'probe_d' ? prisma.$queryRawUnsafe(`SELECT 1 AS ${marker}`) : pool.query(`SELECT 1 AS ${marker}`),
      );
      await dropped;
      errors.push(await failed);
    }
    expect(errors.map(isConnectionError)).toEqual([true, true]);
  });

  it('a connection error when the server cannot be reached', async () => {
    const url = new URL(sandbox.databaseUrl);
    // A port nothing listens on.
    url.port = String(await freePort());
    const { prisma, pool } = connect(url.toString());
    const errors = [
      await failure(prisma.$queryRaw`SELECT 1`),
      await failure(prisma.task.count()),
      await failure(pool.query('SELECT 1')),
    ];
    expect(errors.map(isConnectionError)).toEqual([true, true, true]);
  });
});
