import { type AddressInfo, createConnection, createServer, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy on 127.0.0.1 in front of a real server (Postgres, here), through which one process
 * reaches it: the network between them, made faulty on demand.
 * - {@link partition}: the network goes silent — bytes stop flowing both ways and new connections
 *   hang — until {@link heal}, which drops the stale connections (as peers would after a timeout);
 * - {@link dropAnswerTo}: the next request whose bytes contain a marker reaches the server (which
 *   executes and commits it), but the connection is cut before its answer gets back.
 */
export class TcpProxy {
  private readonly pairs = new Set<{ client: Socket; server: Socket }>();
  private partitioned = false;
  private answerDrop: { marker: string; done: () => void } | null = null;

  private constructor(
    private readonly listener: Server,
    readonly port: number,
  ) {}

  static async start(target: { host: string; port: number }): Promise<TcpProxy> {
    let self: TcpProxy | null = null;
    const listener = createServer((client) => self!.accept(client, target));
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    self = new TcpProxy(listener, (listener.address() as AddressInfo).port);
    return self;
  }

  /** `url` (a connection string) with its host and port replaced by the proxy's. */
  urlFor(url: string): string {
    const parsed = new URL(url);
    parsed.hostname = '127.0.0.1';
    parsed.port = String(this.port);
    return parsed.toString();
  }

  partition(): void {
    this.partitioned = true;
    for (const { client, server } of this.pairs) {
      client.pause();
      server.pause();
    }
  }

  heal(): void {
    this.partitioned = false;
    for (const pair of this.pairs) {
      pair.client.destroy();
      pair.server.destroy();
    }
    this.pairs.clear();
  }

  /** Resolves once a request containing `marker` went through and its connection was cut before the answer. */
  dropAnswerTo(marker: string): Promise<void> {
    return new Promise((done) => (this.answerDrop = { marker, done }));
  }

  async close(): Promise<void> {
    this.heal();
    await new Promise<void>((resolve) => this.listener.close(() => resolve()));
  }

  private accept(client: Socket, target: { host: string; port: number }): void {
    const server = createConnection(target);
    const pair = { client, server };
    this.pairs.add(pair);
    const end = () => {
      this.pairs.delete(pair);
      client.destroy();
      server.destroy();
    };
    client.on('error', end).on('close', end);
    server.on('error', end).on('close', end);
    if (this.partitioned) {
      client.pause();
      server.pause();
    }
    let cutting = false;
    client.on('data', (chunk: Buffer) => {
      const drop = this.answerDrop;
      if (drop && chunk.includes(drop.marker)) {
        this.answerDrop = null;
        cutting = true;
        server.write(chunk);
        // The server has the request; whatever it answers never arrives. Cut once it has had time to commit.
        server.once('data', () => {
          end();
          drop.done();
        });
        return;
      }
      if (!cutting) server.write(chunk);
    });
    server.on('data', (chunk: Buffer) => {
      if (!cutting) client.write(chunk);
    });
  }
}
