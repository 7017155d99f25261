import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../support/database.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { ServiceProcess } from './support/service-process.js';

// npm start with HTTP_WORKERS=2, its database behind a proxy a test can cut. A worker dies while the
// database is away, and its replacement can't start (it opens the database first). The supervisor
// took that for a bad configuration and stopped the service, the surviving worker with it: everyone
// lost the service for one worker's fault. It now tries the replacement again until it starts.
let database: Awaited<ReturnType<typeof createTestDatabase>>;
let proxy: TcpProxy;
let service: ServiceProcess;

beforeAll(async () => {
  database = await createTestDatabase();
  proxy = await TcpProxy.start(database.url!);
  service = await ServiceProcess.start({
    DATABASE_URL: proxy.proxied(database.url!),
    HTTP_WORKERS: '2',
    LOG_LEVEL: 'info',
  });
  // Discovery answers once the first worker listens; the second starts after it.
  for (let waited = 0; !service.output.includes('"workers":2') && waited < 60_000; waited += 200) {
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}, 90_000);
afterAll(async () => {
  await service?.kill();
  await proxy?.close();
  await database?.close();
});

const discovery = () =>
  fetch(service.url('/.well-known/openid-configuration'), { signal: AbortSignal.timeout(5_000) }).then(
    async (response) => {
      await response.body?.cancel();
      return response.status;
    },
    () => 0,
  );

describe('a worker replaced while the database is away', () => {
  it('the other worker goes on serving, and the replacement starts once the database is back', async () => {
    expect(service.output).toContain('"workers":2');
    const [victim, survivor] = service.childPids();
    expect(survivor).toBeDefined();
    proxy.cut();
    process.kill(victim!, 'SIGKILL');

    // The replacement fails to open the database at least once.
    await expect
      .poll(() => service.output.includes('a replacement worker could not start'), {
        timeout: 30_000,
        interval: 200,
      })
      .toBe(true);
    // The supervisor and the surviving worker are still there; discovery needs no database.
    expect(service.childPids()).toContain(survivor);
    expect(await discovery()).toBe(200);

    await proxy.restore();
    await expect
      .poll(() => service.childPids().length === 2 && !service.childPids().includes(victim!), {
        timeout: 30_000,
        interval: 200,
      })
      .toBe(true);
    for (let attempt = 0; attempt < 4; attempt++) expect(await discovery()).toBe(200);
  }, 90_000);
});
