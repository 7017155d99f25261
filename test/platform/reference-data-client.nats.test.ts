import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../events/support/eventually.js';
import { deleteStream, natsUrl, uniqueNatsEnvironment } from '../events/support/nats-test-stream.js';
import { natsTarget, startTcpProxy, type TcpProxy } from '../events/support/tcp-proxy.js';
import { createServiceClient } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { platformRequest } from './support/platform-http.js';
import { userTokenWith } from './support/platform-tokens.js';

const uniqueKey = (label = 'subject') => `${label}_${crypto.randomBytes(4).toString('hex')}`;

async function readerCredentials(svc: TestService) {
  const { client, clientSecret } = await createServiceClient(svc.service.db, [
    'service:platform.reference-data.read',
  ]);
  return { clientId: client.clientId, clientSecret: clientSecret! };
}

// Against the real NATS JetStream server: this file runs when NATS_URL is set (CI does).

/** The client process's stdout, one JSON object per line. */
class ChildLines {
  readonly lines: Record<string, unknown>[] = [];
  #buffer = '';

  constructor(child: ChildProcess) {
    child.stdout!.on('data', (chunk: Buffer) => {
      this.#buffer += chunk.toString();
      let newline;
      while ((newline = this.#buffer.indexOf('\n')) >= 0) {
        this.lines.push(JSON.parse(this.#buffer.slice(0, newline)));
        this.#buffer = this.#buffer.slice(newline + 1);
      }
    });
  }

  async waitFor(predicate: (line: Record<string, unknown>) => boolean, timeoutMs = 15_000) {
    return eventually(() => {
      const found = this.lines.find(predicate);
      expect(found, JSON.stringify(this.lines.slice(-3))).toBeDefined();
      return found!;
    }, timeoutMs);
  }

  latest(): Record<string, unknown> {
    return this.lines[this.lines.length - 1] ?? {};
  }
}

describe('the reference-data client in another process (NATS JetStream)', () => {
  const environment = uniqueNatsEnvironment();
  let svc: TestService;
  let admin: string;
  let proxy: TcpProxy;
  let child: ChildProcess | undefined;

  beforeAll(async () => {
    svc = await startTestService({ env: environment });
    admin = await userTokenWith(svc, ['platform.reference-data.manage']);
    proxy = await startTcpProxy(natsTarget(natsUrl!));
  });
  afterEach(async () => {
    if (child && child.exitCode === null) {
      const exited = new Promise((resolve) => child!.on('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
  });
  afterAll(async () => {
    await proxy?.close();
    await svc?.close();
    await deleteStream(environment.NATS_STREAM);
    await deleteStream(environment.NATS_MANAGEMENT_STREAM);
  });

  it('change → event → the other process’s cache is refreshed, and resynced after a reconnect', async () => {
    const credentials = await readerCredentials(svc);
    const script = fileURLToPath(new URL('./support/reference-client-process.ts', import.meta.url));
    child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        script,
        svc.issuer,
        credentials.clientId,
        credentials.clientSecret,
        `nats://127.0.0.1:${proxy.port}`,
        environment.NATS_STREAM,
        environment.NATS_SUBJECT_PREFIX,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const output = new ChildLines(child);
    await output.waitFor((line) => line.type === 'ready', 30_000);

    const key = uniqueKey('calculus');
    await platformRequest(svc, 'POST', '/reference/subjects', {
      token: admin,
      body: { key, title: { en: 'Calculus' } },
    });
    await output.waitFor(
      (line) =>
        line.type === 'changed' &&
        line.reason === 'event' &&
        (line.subjects as Record<string, string>)[key] === 'Calculus',
    );

    await platformRequest(svc, 'PATCH', `/reference/subjects/${key}`, {
      token: admin,
      body: { title: { en: 'Differential calculus' } },
    });
    await output.waitFor(
      (line) => (line.subjects as Record<string, string> | undefined)?.[key] === 'Differential calculus',
    );

    // The broker goes away for the client; a change happens meanwhile; the broker comes back.
    const port = proxy.port;
    await proxy.close();
    await platformRequest(svc, 'PATCH', `/reference/subjects/${key}`, {
      token: admin,
      body: { title: { en: 'Integral calculus' } },
    });
    await eventually(async () =>
      expect(await svc.service.db('event_outbox').whereNull('sent_at').count({ count: '*' })).toEqual([
        { count: 0 },
      ]),
    );
    proxy = await startTcpProxy(natsTarget(natsUrl!), port);
    await output.waitFor((line) => line.type === 'reconnected', 20_000);
    await output.waitFor(
      (line) =>
        line.type === 'changed' &&
        line.reason === 'resync' &&
        (line.subjects as Record<string, string>)[key] === 'Integral calculus',
      20_000,
    );
    expect((output.latest().subjects as Record<string, string> | undefined)?.[key]).toBe('Integral calculus');
  });
});
