import net from 'node:net';

/**
 * A TCP proxy in front of one storage node, so that a test can cut the service off from the node
 * while the node itself runs on: `partition()` drops every open connection and every new one (a
 * peer sees its connection reset: not applied, or maybe applied mid-request), `heal()` lets them
 * through again. Bound to 127.0.0.1.
 */
export class TcpProxy {
  private server?: net.Server;
  private readonly open = new Set<net.Socket>();
  private cut = false;

  constructor(
    readonly port: number,
    private readonly target: { host: string; port: number },
  ) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get partitioned(): boolean {
    return this.cut;
  }

  start(): Promise<this> {
    const server = net.createServer((client) => {
      if (this.cut) {
        client.destroy();
        return;
      }
      const upstream = net.connect(this.target.port, this.target.host);
      for (const socket of [client, upstream]) {
        this.open.add(socket);
        socket.on('close', () => this.open.delete(socket));
        socket.on('error', () => undefined);
      }
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
      client.pipe(upstream);
      upstream.pipe(client);
    });
    this.server = server;
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve(this));
    });
  }

  partition(): void {
    this.cut = true;
    for (const socket of this.open) socket.destroy();
  }

  heal(): void {
    this.cut = false;
  }

  async stop(): Promise<void> {
    this.partition();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
