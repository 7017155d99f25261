import net from 'node:net';

type Mode = 'forward' | 'refuse' | 'stall';

/**
 * A TCP proxy in front of the shared PostgreSQL server, so a test can take "the database" away from
 * one service without touching the server the other test files use:
 *
 * - `cut()`: every open connection is dropped and new ones are refused, as while a server restarts;
 * - `stall()`: connections are accepted but nothing is ever forwarded, as with an unreachable host;
 * - `cutWhenClientSends(text)`: forwards until a client sends `text` (e.g. a table name), then cuts
 *   before it arrives: the database goes away in the middle of a request;
 * - `restore()`: forwards again.
 */
export class TcpProxy {
  #mode: Mode = 'forward';
  #cutTrigger: string | undefined;
  readonly #sockets = new Set<net.Socket>();
  #server: net.Server;
  #port = 0;

  private constructor(private readonly target: { host: string; port: number }) {
    this.#server = this.#createServer();
  }

  /** A proxy to the server of `databaseUrl`, listening on a free port of 127.0.0.1. */
  static async start(databaseUrl: string): Promise<TcpProxy> {
    const url = new URL(databaseUrl);
    const proxy = new TcpProxy({ host: url.hostname, port: Number(url.port || 5432) });
    await proxy.#listen();
    return proxy;
  }

  /** `databaseUrl` with its host and port replaced by the proxy's. */
  proxied(databaseUrl: string): string {
    const url = new URL(databaseUrl);
    url.hostname = '127.0.0.1';
    url.port = String(this.#port);
    return url.toString();
  }

  cut(): void {
    this.#mode = 'refuse';
    this.#cutTrigger = undefined;
    this.#dropAll();
    // Refused, not reset: nothing listens on the port until restore().
    this.#server.close();
  }

  stall(): void {
    this.#mode = 'stall';
    this.#dropAll();
  }

  cutWhenClientSends(text: string): void {
    this.#cutTrigger = text;
  }

  async restore(): Promise<void> {
    const refused = this.#mode === 'refuse';
    this.#mode = 'forward';
    this.#cutTrigger = undefined;
    if (refused) {
      this.#server = this.#createServer();
      await this.#listen();
    } else {
      this.#dropAll();
    }
  }

  async close(): Promise<void> {
    this.#dropAll();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #createServer(): net.Server {
    return net.createServer((client) => {
      this.#track(client);
      if (this.#mode !== 'forward') return; // stall: held open, never answered
      const server = net.connect(this.target);
      this.#track(server);
      client.on('data', (chunk: Buffer) => {
        if (this.#cutTrigger && chunk.includes(this.#cutTrigger)) return this.cut();
        server.write(chunk);
      });
      server.pipe(client);
      client.on('close', () => server.destroy());
      server.on('close', () => client.destroy());
    });
  }

  #track(socket: net.Socket): void {
    this.#sockets.add(socket);
    socket.on('error', () => socket.destroy());
    socket.on('close', () => this.#sockets.delete(socket));
  }

  #dropAll(): void {
    for (const socket of this.#sockets) socket.destroy();
    this.#sockets.clear();
  }

  async #listen(): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen(this.#port, '127.0.0.1', () => {
        this.#server.off('error', reject);
        resolve();
      });
    });
    this.#port = (this.#server.address() as net.AddressInfo).port;
  }
}
