import net from 'node:net';

/**
 * A port nobody listens on right now, for a process that must be told its port before it starts (a
 * child service, a proxy). The port is only probed: another process may take it before ours binds,
 * so a caller that starts a child retries on EADDRINUSE (test/service/cluster.postgres.test.ts does).
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}
