import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OutgoingMessage, Transport } from '../../src/identity/transports/transport.js';
import { createTestUser } from '../support/fixtures.js';
import { callIdentityApi, uniqueIp } from '../support/identity-api-client.js';
import { startTestService, type TestService } from '../support/test-service.js';

/** A transport plugin (e.g. a messenger bot) that can also deliver to email addresses. */
const messenger: Transport & { delivered: OutgoingMessage[] } = {
  name: 'messenger',
  label: 'Messenger',
  channels: ['email'],
  delivered: [],
  async send(message) {
    this.delivered.push(message);
  },
};

let service: TestService;
beforeAll(async () => {
  service = await startTestService({ transports: [messenger], env: { TRUST_PROXY: 'true' } });
});
afterAll(() => service?.close());

describe('choosing a transport for the reset code', () => {
  it('asks which transport to use when several can deliver, then uses the one chosen', async () => {
    const user = await createTestUser(service.service.db);
    const forgot = (transport?: string) =>
      callIdentityApi(
        service,
        '/auth/password/forgot',
        { identifier: user.email, transport },
        { ip: uniqueIp() },
      );

    const choice = await forgot();
    expect(choice).toMatchObject({
      status: 200,
      body: {
        status: 'choose_transport',
        transports: [
          { name: 'messenger', label: 'Messenger' },
          { name: 'development', label: 'Development outbox' },
        ],
      },
    });
    expect(messenger.delivered).toHaveLength(0);

    expect((await forgot('messenger')).body).toMatchObject({ status: 'code_sent' });
    await expect.poll(() => messenger.delivered.at(-1)?.to).toBe(user.email);
    expect(messenger.delivered.at(-1)).toMatchObject({ purpose: 'reset_password' });
    expect(service.service.developmentMessages.latestTo(user.email!)).toBeUndefined();

    expect((await forgot('carrier-pigeon')).body).toMatchObject({ error: 'unknown_transport' });
  });

  it('offers the choice on the reset page too', async () => {
    const user = await createTestUser(service.service.db);
    const response = await fetch(service.url('/en/reset-password/request'), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': uniqueIp() },
      body: new URLSearchParams({ identifier: user.email! }).toString(),
    });
    const html = await response.text();
    expect(html).toContain('data-testid="transports"');
    expect(html).toContain('value="messenger"');
    expect(html).toContain('value="development"');
  });
});
