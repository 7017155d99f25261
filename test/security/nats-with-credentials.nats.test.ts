// The service could only connect to NATS anonymously: a deployment had to run a broker that let anyone
// in, and then anyone who reached it could publish crm's events (which move the finance, marketing and
// sales dashboards) and the platform's, or read them. With NATS_USER and NATS_PASSWORD (or NATS_TOKEN)
// the service signs in, so the broker can refuse everyone else.
import crypto from 'node:crypto';
import { connect } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniqueNatsEnvironment } from '../events/support/nats-test-stream.js';
import { OwnNats } from '../faults/support/own-nats.js';
import { startTestService, type TestService } from '../support/test-service.js';

const password = crypto.randomBytes(16).toString('hex');
let nats: OwnNats;
let service: TestService | undefined;

beforeAll(async () => {
  nats = await OwnNats.create(['--user', 'identity', '--pass', password]);
});
afterAll(async () => {
  await service?.close();
  await nats?.destroy();
});

const eventBusCheck = async (svc: TestService) => {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const body = (await (await fetch(svc.url('/readyz'))).json()) as { checks: { eventBus: string } };
    if (body.checks.eventBus === 'ok' || Date.now() > deadline) return body.checks.eventBus;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
};

describe('NATS with credentials', () => {
  it('the broker refuses an anonymous client', async () => {
    await expect(connect({ servers: nats.url, timeout: 2000, maxReconnectAttempts: 0 })).rejects.toThrow();
  });

  it('the service signs in with NATS_USER and NATS_PASSWORD and is ready', async () => {
    service = await startTestService({
      env: { ...uniqueNatsEnvironment(nats.url), NATS_USER: 'identity', NATS_PASSWORD: password },
    });
    expect(await eventBusCheck(service)).toBe('ok');
  }, 30_000);
});
