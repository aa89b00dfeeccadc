import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './processes.js';

const PG_LIB = '/usr/lib/postgresql';

/** The directory of the newest Postgres server binaries on this machine, or null. */
function serverBin(): string | null {
  if (!existsSync(PG_LIB)) return null;
  const versions = readdirSync(PG_LIB)
    .filter((v) => existsSync(join(PG_LIB, v, 'bin', 'pg_ctl')))
    .sort((a, b) => Number(b) - Number(a));
  return versions.length > 0 ? join(PG_LIB, versions[0]!, 'bin') : null;
}

/** Why a throwaway Postgres server cannot run here, or null when it can. */
export function ownPostgresUnavailable(): string | null {
  return serverBin() ? null : `no Postgres server binaries under ${PG_LIB}`;
}

/**
 * A throwaway Postgres server of a test's own (initdb into a temporary directory, its own port), so
 * that it may be stopped, restarted or kept down for a while — what `pg_ctlcluster … restart` or a
 * failover does to the service — without touching the server every other test uses. Run as the
 * `postgres` user when the tests run as root (Postgres refuses to run as root).
 */
export class OwnPostgres {
  private constructor(
    private readonly bin: string,
    private readonly dir: string,
    readonly port: number,
  ) {}

  static async start(): Promise<OwnPostgres> {
    const bin = serverBin();
    if (!bin) throw new Error(ownPostgresUnavailable()!);
    const dir = mkdtempSync(join(tmpdir(), 'punctual-pg-'));
    chmodSync(dir, 0o700);
    if (process.getuid?.() === 0) {
      const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
      const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
      chownSync(dir, uid, gid);
    }
    const server = new OwnPostgres(bin, dir, await freePort());
    server.pg('initdb', ['-D', join(dir, 'data'), '-A', 'trust', '-U', 'postgres', '--no-sync', '--no-instructions']);
    server.start();
    return server;
  }

  /** The connection string's base (`postgresql://postgres@127.0.0.1:PORT`). */
  get base(): string {
    return `postgresql://postgres@127.0.0.1:${this.port}`;
  }

  /** Starts the server and waits until it accepts connections. */
  start(): void {
    const options = `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200`;
    this.pg('pg_ctl', [
      '-D',
      join(this.dir, 'data'),
      '-l',
      join(this.dir, 'log'),
      '-o',
      options,
      '-w',
      '-t',
      '60',
      'start',
    ]);
  }

  /** Stops it as an operator's restart or a failover does: sessions are ended, nothing answers until {@link start}. */
  stop(): void {
    this.pg('pg_ctl', ['-D', join(this.dir, 'data'), '-m', 'fast', '-w', 'stop']);
  }

  /** Stops the server for good and removes its files. */
  dispose(): void {
    try {
      this.pg('pg_ctl', ['-D', join(this.dir, 'data'), '-m', 'immediate', '-w', 'stop']);
    } catch {
      // Already down.
    }
    rmSync(this.dir, { recursive: true, force: true });
  }

  private pg(program: string, args: string[]): void {
    const path = join(this.bin, program);
    if (process.getuid?.() === 0) execFileSync('runuser', ['-u', 'postgres', '--', path, ...args], { stdio: 'ignore' });
    else execFileSync(path, args, { stdio: 'ignore' });
  }
}
