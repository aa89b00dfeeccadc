import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort, waitFor } from './processes.js';

/** Why no PgBouncer can run here (not on PATH), or null when it can. */
export function pgbouncerUnavailable(): string | null {
  try {
    execFileSync('sh', ['-c', 'command -v pgbouncer'], { stdio: 'ignore' });
    return null;
  } catch {
    return 'pgbouncer is not on PATH (Debian: apt-get install pgbouncer; .ci/run installs it)';
  }
}

/**
 * A PgBouncer of a test's own in `pool_mode=transaction` in front of a Postgres server, as managed
 * poolers run it: any transaction of a client may run on any server connection, so nothing may rely
 * on a session (a setting, a prepared statement, a session lock) outside one transaction. Runs as
 * the `postgres` user when the tests run as root (PgBouncer refuses root).
 */
export class OwnPgBouncer {
  private constructor(
    private readonly dir: string,
    readonly port: number,
    private readonly child: ChildProcess,
  ) {}

  static async start(
    server: { host: string; port: number },
    options: { poolSize?: number } = {},
  ): Promise<OwnPgBouncer> {
    const dir = mkdtempSync(join(tmpdir(), 'punctual-pgbouncer-'));
    const port = await freePort();
    writeFileSync(join(dir, 'users.txt'), '"postgres" ""\n');
    writeFileSync(
      join(dir, 'pgbouncer.ini'),
      [
        '[databases]',
        `* = host=${server.host} port=${server.port}`,
        '[pgbouncer]',
        'listen_addr = 127.0.0.1',
        `listen_port = ${port}`,
        'unix_socket_dir =',
        'auth_type = trust',
        `auth_file = ${join(dir, 'users.txt')}`,
        'admin_users = postgres',
        'pool_mode = transaction',
        'max_client_conn = 2000',
        `default_pool_size = ${options.poolSize ?? 20}`,
        // What deploying.md asks of a production pooler in front of the API and the workers.
        'idle_transaction_timeout = 60',
        `logfile = ${join(dir, 'pgbouncer.log')}`,
        '',
      ].join('\n'),
    );
    // As root: the process itself runs as postgres (no runuser in between, so a kill reaches it).
    let user: { uid: number; gid: number } | object = {};
    if (process.getuid?.() === 0) {
      const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
      const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
      for (const file of ['', 'users.txt', 'pgbouncer.ini']) chownSync(join(dir, file), uid, gid);
      user = { uid, gid };
    }
    const child = spawn('pgbouncer', [join(dir, 'pgbouncer.ini')], { stdio: 'ignore', ...user });
    const bouncer = new OwnPgBouncer(dir, port, child);
    await waitFor(
      async () => (await bouncer.show('VERSION').catch(() => null)) !== null,
      10_000,
      'pgbouncer to listen',
    );
    return bouncer;
  }

  /** `databaseUrl` (a database of the server behind it) reached through this PgBouncer. */
  urlFor(databaseUrl: string): string {
    const url = new URL(databaseUrl);
    url.hostname = '127.0.0.1';
    url.port = String(this.port);
    return url.toString();
  }

  /** `SHOW <what>` on PgBouncer's admin console, as rows. */
  async show(what: string): Promise<Record<string, unknown>[]> {
    const client = new pg.Client({ host: '127.0.0.1', port: this.port, user: 'postgres', database: 'pgbouncer' });
    client.on('error', () => undefined);
    await client.connect();
    try {
      // The admin console speaks the simple query protocol only: a query without parameters.
      return (await client.query(`SHOW ${what}`)).rows;
    } finally {
      await client.end().catch(() => undefined);
    }
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const exited = new Promise((resolve) => this.child.once('exit', resolve));
      this.child.kill('SIGKILL');
      await exited;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
