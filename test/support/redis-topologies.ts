import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort, waitFor } from './processes.js';

/** A redis-server (or sentinel) process of a test's own, on a loopback port. */
class RedisProcess {
  constructor(
    readonly port: number,
    readonly child: ChildProcess,
  ) {}

  static spawn(port: number, args: string[]): RedisProcess {
    return new RedisProcess(port, spawn('redis-server', args, { stdio: 'ignore' }));
  }

  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** One command on a connection of its own (no retries: a dead process is an error at once). */
  async call(...args: [string, ...(string | number)[]]): Promise<unknown> {
    const client = new Redis(this.port, '127.0.0.1', {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    client.on('error', () => undefined);
    try {
      await client.connect();
      return await client.call(args[0], ...args.slice(1).map(String));
    } finally {
      client.disconnect();
    }
  }

  async answers(): Promise<boolean> {
    return this.call('PING').then(
      () => true,
      () => false,
    );
  }

  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    if (!this.alive) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.kill(signal);
    await exited;
  }
}

const SERVER = ['--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'];

/**
 * Redis behind Sentinel, as a managed offering or a Helm chart runs it: one primary, one replica
 * and three sentinels (quorum 2) monitoring it as `mymaster`, all on loopback ports. A primary the
 * sentinels cannot reach for `downAfterMs` is replaced by its replica.
 */
export class SentinelRedis {
  static readonly MASTER = 'mymaster';

  private constructor(
    private readonly dir: string,
    readonly servers: RedisProcess[],
    readonly sentinels: RedisProcess[],
    readonly downAfterMs: number,
  ) {}

  static async start(options: { downAfterMs?: number } = {}): Promise<SentinelRedis> {
    const downAfterMs = options.downAfterMs ?? 1_000;
    const dir = mkdtempSync(join(tmpdir(), 'punctual-sentinel-'));
    const primaryPort = await freePort();
    const servers = [RedisProcess.spawn(primaryPort, ['--port', String(primaryPort), ...SERVER])];
    await waitFor(() => servers[0]!.answers(), 10_000, 'the primary');
    const replicaPort = await freePort();
    servers.push(
      RedisProcess.spawn(replicaPort, [
        '--port',
        String(replicaPort),
        ...SERVER,
        '--replicaof',
        '127.0.0.1',
        String(primaryPort),
      ]),
    );
    await waitFor(
      async () =>
        String(await servers[1]!.call('INFO', 'replication').catch(() => '')).includes('master_link_status:up'),
      10_000,
      'the replica in sync',
    );
    const sentinels: RedisProcess[] = [];
    for (let i = 0; i < 3; i += 1) {
      const port = await freePort();
      // A sentinel rewrites its own file: each has one, in the topology's directory.
      const file = join(dir, `sentinel-${port}.conf`);
      writeFileSync(
        file,
        [
          `port ${port}`,
          'bind 127.0.0.1',
          `dir ${dir}`,
          `sentinel monitor ${SentinelRedis.MASTER} 127.0.0.1 ${primaryPort} 2`,
          `sentinel down-after-milliseconds ${SentinelRedis.MASTER} ${downAfterMs}`,
          `sentinel failover-timeout ${SentinelRedis.MASTER} 10000`,
          `sentinel parallel-syncs ${SentinelRedis.MASTER} 1`,
          '',
        ].join('\n'),
      );
      sentinels.push(RedisProcess.spawn(port, [file, '--sentinel']));
    }
    const topology = new SentinelRedis(dir, servers, sentinels, downAfterMs);
    // Every sentinel knows the primary, its replica and the other sentinels.
    await waitFor(
      async () => {
        const views = await Promise.all(
          sentinels.map((s) => s.call('SENTINEL', 'MASTER', SentinelRedis.MASTER).catch(() => null)),
        );
        return views.every(
          (v) => Array.isArray(v) && fieldOf(v, 'num-slaves') === '1' && fieldOf(v, 'num-other-sentinels') === '2',
        );
      },
      20_000,
      'the sentinels to know the primary, the replica and each other',
    );
    return topology;
  }

  /** `REDIS_SENTINELS` for the processes under test. */
  get env(): Record<string, string> {
    return {
      REDIS_SENTINELS: this.sentinels.map((s) => s.address).join(','),
      REDIS_SENTINEL_MASTER: SentinelRedis.MASTER,
    };
  }

  /** The port of the primary the sentinels name now. */
  async primaryPort(): Promise<number> {
    const reply = (await this.sentinels
      .find((s) => s.alive)!
      .call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', SentinelRedis.MASTER)) as string[];
    return Number(reply[1]);
  }

  server(port: number): RedisProcess {
    return this.servers.find((s) => s.port === port)!;
  }

  async stop(): Promise<void> {
    await Promise.all([...this.sentinels, ...this.servers].map((p) => p.kill()));
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** The value after `name` in a flat [name, value, …] reply. */
function fieldOf(reply: unknown[], name: string): string | undefined {
  const i = reply.indexOf(name);
  return i >= 0 ? String(reply[i + 1]) : undefined;
}

/** A free port whose cluster bus port (port + 10000) is free too. */
async function clusterPort(): Promise<number> {
  for (;;) {
    const port = await freePort();
    if (port <= 55_000 && (await isFree(port + 10_000))) return port;
  }
}

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * A Redis Cluster of three primaries, each with one replica (`redis-cli --cluster create`), with a
 * node timeout of `nodeTimeoutMs`: a primary unreachable that long is replaced by its replica.
 */
export class ClusterRedis {
  private constructor(
    private readonly dir: string,
    readonly nodes: RedisProcess[],
  ) {}

  static async start(options: { nodeTimeoutMs?: number } = {}): Promise<ClusterRedis> {
    const dir = mkdtempSync(join(tmpdir(), 'punctual-cluster-'));
    const nodes: RedisProcess[] = [];
    for (let i = 0; i < 6; i += 1) {
      const port = await clusterPort();
      const args = [
        '--port',
        String(port),
        ...SERVER,
        '--dir',
        dir,
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        `nodes-${port}.conf`,
        '--cluster-node-timeout',
        String(options.nodeTimeoutMs ?? 1_000),
      ];
      nodes.push(RedisProcess.spawn(port, args));
    }
    const cluster = new ClusterRedis(dir, nodes);
    try {
      await waitFor(
        async () => (await Promise.all(nodes.map((n) => n.answers()))).every(Boolean),
        10_000,
        'the cluster nodes',
      );
      execFileSync(
        'redis-cli',
        ['--cluster', 'create', ...nodes.map((n) => n.address), '--cluster-replicas', '1', '--cluster-yes'],
        { stdio: 'ignore', timeout: 30_000 },
      );
      await waitFor(
        async () =>
          (await Promise.all(nodes.map((n) => n.call('CLUSTER', 'INFO').catch(() => '')))).every((info) =>
            String(info).includes('cluster_state:ok'),
          ),
        20_000,
        'cluster_state:ok on every node',
      );
    } catch (error) {
      await cluster.stop();
      throw error;
    }
    return cluster;
  }

  /** `REDIS_CLUSTER_NODES` for the processes under test. */
  get env(): Record<string, string> {
    return { REDIS_CLUSTER_NODES: this.nodes.map((n) => n.address).join(',') };
  }

  /** The node that serves `key`'s slot as primary now, as a live node sees the cluster. */
  async primaryOf(key: string): Promise<RedisProcess> {
    const live = this.nodes.find((n) => n.alive)!;
    const slot = Number(await live.call('CLUSTER', 'KEYSLOT', key));
    const ranges = (await live.call('CLUSTER', 'SLOTS')) as [
      number,
      number,
      [string, number, ...unknown[]],
      ...unknown[],
    ][];
    const range = ranges.find(([from, to]) => slot >= from && slot <= to)!;
    return this.nodes.find((n) => n.port === Number(range[2][1]))!;
  }

  /** The live nodes that are primaries now. */
  async primaries(): Promise<RedisProcess[]> {
    const roles = await Promise.all(
      this.nodes.map(async (n) =>
        n.alive
          ? String(
              await n
                .call('ROLE')
                .then((r) => (r as unknown[])[0])
                .catch(() => ''),
            )
          : '',
      ),
    );
    return this.nodes.filter((_, i) => roles[i] === 'master');
  }

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((n) => n.kill()));
    rmSync(this.dir, { recursive: true, force: true });
  }
}
