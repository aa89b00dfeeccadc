import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** One job as the peer worker saw it, in epoch milliseconds. */
export interface PeerRecord {
  due: number;
  started: number;
  finished: number;
}

/** A bare BullMQ worker in a process of its own (see peer-worker.ts), driven over IPC. */
export class PeerWorker {
  private constructor(private readonly child: ChildProcess) {}

  /** `databaseUrl`: the fair ceiling (see peer-worker.ts), claiming and recording each job's `task_execution` row there. */
  static async start(options: {
    redisUrl: string;
    prefix: string;
    queue: string;
    concurrency: number;
    jobMs?: number;
    databaseUrl?: string;
  }): Promise<PeerWorker> {
    const child = fork(fileURLToPath(new URL('./peer-worker.js', import.meta.url)), [], {
      env: {
        PATH: process.env.PATH ?? '',
        PEER_REDIS_URL: options.redisUrl,
        PEER_PREFIX: options.prefix,
        PEER_QUEUE: options.queue,
        PEER_CONCURRENCY: String(options.concurrency),
        PEER_JOB_MS: String(options.jobMs ?? 0),
        ...(options.databaseUrl ? { PEER_DATABASE_URL: options.databaseUrl } : {}),
      },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const peer = new PeerWorker(child);
    await peer.next('ready');
    return peer;
  }

  /** Everything the peer processed so far. */
  async records(): Promise<PeerRecord[]> {
    this.child.send({ kind: 'report' });
    const { records } = (await this.next('report')) as { records: number[] };
    const out: PeerRecord[] = [];
    for (let i = 0; i < records.length; i += 3)
      out.push({ due: records[i]!, started: records[i + 1]!, finished: records[i + 2]! });
    return out;
  }

  /** How many jobs the peer has processed so far. */
  async count(): Promise<number> {
    this.child.send({ kind: 'count' });
    return ((await this.next('count')) as { count: number }).count;
  }

  /** Sends the peer's process a signal (SIGSTOP and SIGCONT freeze it and let it go). */
  signal(signal: NodeJS.Signals): void {
    if (this.child.exitCode === null) this.child.kill(signal);
  }

  async stop(): Promise<void> {
    this.signal('SIGCONT');
    if (this.child.exitCode !== null) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.send({ kind: 'stop' });
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  }

  private next(kind: string): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const onMessage = (message: { kind: string }) => {
        if (message.kind !== kind) return;
        this.child.off('message', onMessage);
        this.child.off('exit', onExit);
        resolve(message);
      };
      const onExit = (code: number | null) => reject(new Error(`peer worker exited with ${code} before "${kind}"`));
      this.child.on('message', onMessage);
      this.child.once('exit', onExit);
    });
  }
}
