import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { hashClientSecret } from '../../src/oidc/models/oauth-client.js';
import { createServiceClient } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/test-service.js';

// A short poll (the default is 5 s): the rules are the same, the waits a tenth.
const clientChangePollMs = 250;

let service: TestService;
beforeAll(async () => {
  service = await startTestService({
    settings: { clientCache: { changePollMilliseconds: clientChangePollMs } },
  });
});
afterAll(() => service?.close());

const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;

/** Client authentication at the introspection endpoint: 200 for a client the node accepts, else 401. */
async function authenticates(clientId: string, secret: string): Promise<number> {
  const response = await fetch(service.url('/oauth/introspect'), {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: basic(clientId, secret),
    },
    body: new URLSearchParams({ token: 'x' }),
  });
  return response.status;
}

/**
 * A service client this node has cached, then disabled by a direct write (as another node would: this
 * process hears nothing); returns once this node refuses it (within two change polls).
 */
async function cachedThenDisabledElsewhere() {
  const { db } = service.service;
  const created = await createServiceClient(db, ['service:crm.aggregates.read']);
  const { clientId } = created.client;
  expect(await authenticates(clientId, created.clientSecret!)).toBe(200);
  await db('oauth_clients')
    .where({ client_id: clientId })
    .update({ is_active: false, updated_at: new Date() });
  await vi.waitFor(async () => expect(await authenticates(clientId, created.clientSecret!)).toBe(401), {
    timeout: clientChangePollMs * 2 + 2_000,
    interval: 50,
  });
  return created;
}

// Another node writes the row: this process hears nothing, only the database knows.
describe('clients changed by another node', () => {
  it('refuses a client disabled elsewhere within the change poll, though it had it cached', async () => {
    // cachedThenDisabledElsewhere waits for the refusal; it then stays.
    const { client, clientSecret } = await cachedThenDisabledElsewhere();
    expect(await authenticates(client.clientId, clientSecret!)).toBe(401);
  });

  it('accepts a client created elsewhere after its id was asked for and found unknown', async () => {
    const { db } = service.service;
    const clientId = `created-elsewhere-${randomUUID()}`;
    const secret = 'a-secret-of-the-other-node-a-secret-of-the-other-node';
    expect(await authenticates(clientId, secret)).toBe(401);
    await db('oauth_clients').insert({
      client_id: clientId,
      client_secret_hash: hashClientSecret(secret),
      type: 'confidential',
      name: 'Created on another node',
      redirect_uris: [],
      post_logout_redirect_uris: [],
      allowed_scopes: ['service:crm.aggregates.read'],
      grant_types: ['client_credentials'],
    });
    await vi.waitFor(async () => expect(await authenticates(clientId, secret)).toBe(200), {
      timeout: clientChangePollMs * 2 + 2_000,
      interval: 50,
    });
  });
});

describe('a change seen by the node', () => {
  it('rebuilds the client once, though the next looks report the change again', async () => {
    const { db } = service.service;
    const { client, clientSecret } = await cachedThenDisabledElsewhere();

    // The looks overlap (a transaction may commit after its updated_at), so the change is reported for
    // a while yet; the disabled version is the one cached, and it stays.
    const reads: string[] = [];
    const countReads = (query: { sql: string; bindings?: unknown[] }) => {
      if (query.sql.includes('oauth_clients') && query.bindings?.includes(client.clientId)) {
        reads.push(query.sql);
      }
    };
    db.on('query', countReads);
    try {
      // Eight looks, all inside the 10 s overlap (src/oidc/client-cache.ts): each reports the change again.
      const until = Date.now() + clientChangePollMs * 8;
      while (Date.now() < until) {
        expect(await authenticates(client.clientId, clientSecret!)).toBe(401);
        await new Promise((resolve) => setTimeout(resolve, clientChangePollMs / 2));
      }
    } finally {
      db.off('query', countReads);
    }
    expect(reads).toEqual([]);
  });
});
