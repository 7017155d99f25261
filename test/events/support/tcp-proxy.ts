import net from 'node:net';

export interface TcpProxy {
  port: number;
  /** Cuts every open connection (the peer sees the server go away and reconnects). */
  dropConnections(): void;
  close(): Promise<void>;
}

/**
 * A TCP relay to `target` on 127.0.0.1: lets a test take the broker away from one client (drop its
 * connections, or listen only later) without touching the shared NATS server.
 */
export async function startTcpProxy(target: { host: string; port: number }, port = 0): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(target.port, target.host);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => socket.destroy());
    }
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    dropConnections() {
      for (const socket of sockets) socket.destroy();
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A port nothing listens on (right now). */
export function natsTarget(url: string): { host: string; port: number } {
  const parsed = new URL(url.split(',')[0]!);
  return { host: parsed.hostname, port: Number(parsed.port || 4222) };
}
