import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  announceClientChange,
  deleteClientRow,
  hashClientSecret,
} from '../../src/oidc/models/oauth-client.js';
import { createServiceClient } from '../support/fixtures.js';
import { expectCollected, serveWatchingRequests } from '../support/garbage-collection.js';
import { startTestService, type TestService } from '../support/test-service.js';

// A short poll (the default is 5 s): the rules are the same, the waits a tenth.
const clientChangePollMs = 250;
// Small bounds (the defaults are 20,000 each): a flood past them takes a second, not a minute.
const maxClients = 100;
const maxUnknownIds = 50;

let service: TestService;
beforeAll(async () => {
  service = await startTestService({
    settings: { clientCache: { changePollMilliseconds: clientChangePollMs, maxClients, maxUnknownIds } },
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

  it('refuses a client deleted elsewhere within the change poll, though it had it cached', async () => {
    const { db } = service.service;
    const created = await createServiceClient(db, ['service:crm.aggregates.read']);
    const { clientId } = created.client;
    expect(await authenticates(clientId, created.clientSecret!)).toBe(200);
    // What deleteClient writes on the other node (clients:delete, DELETE /api/v2/admin/clients/:id).
    expect(await deleteClientRow(db, clientId)).toBe(true);
    await vi.waitFor(async () => expect(await authenticates(clientId, created.clientSecret!)).toBe(401), {
      timeout: clientChangePollMs * 2 + 2_000,
      interval: 50,
    });
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

describe('ids no client has', () => {
  /** Client.find of the node's engine, through the client cache. */
  const find = (clientId: string) => service.service.provider.Client.find(clientId);
  /** A valid-looking client_id that no client has (a stranger can send any number of them). */
  const unknownId = () => `unknown-${randomUUID()}`;

  /** The oauth_clients queries `run` causes for `clientId`. */
  async function clientReads(clientId: string, run: () => Promise<unknown>): Promise<string[]> {
    const { db } = service.service;
    const reads: string[] = [];
    const countReads = (query: { sql: string; bindings?: unknown[] }) => {
      if (query.sql.includes('oauth_clients') && query.bindings?.includes(clientId)) reads.push(query.sql);
    };
    db.on('query', countReads);
    try {
      await run();
    } finally {
      db.off('query', countReads);
    }
    return reads;
  }

  it('never evict the real clients a node has cached, however many are looked up', async () => {
    const { client } = await createServiceClient(service.service.db, ['service:crm.aggregates.read']);
    expect(await find(client.clientId)).toMatchObject({ clientId: client.clientId });
    // More unknown ids than the node keeps clients, or unknown ids: a full cache used to forget every client.
    for (let batch = 0; batch < (maxClients + maxUnknownIds) / 100 + 1; batch++) {
      const found = await Promise.all(Array.from({ length: 100 }, () => find(unknownId())));
      expect(found.every((answer) => answer === undefined)).toBe(true);
    }
    const reads = await clientReads(client.clientId, async () => {
      expect(await find(client.clientId)).toMatchObject({ clientId: client.clientId });
    });
    expect(reads).toEqual([]);
  });

  it('finds a client created after its id was looked up and found unknown', async () => {
    const { db } = service.service;
    const row = (clientId: string) => ({
      client_id: clientId,
      client_secret_hash: hashClientSecret('a-secret-of-the-other-node-a-secret-of-the-other-node'),
      type: 'confidential',
      name: 'Created after a lookup',
      redirect_uris: [],
      post_logout_redirect_uris: [],
      allowed_scopes: ['service:crm.aggregates.read'],
      grant_types: ['client_credentials'],
    });
    // The answer "unknown" is remembered: a second lookup asks the database nothing.
    const announced = unknownId();
    expect(await find(announced)).toBeUndefined();
    expect(await clientReads(announced, () => find(announced))).toEqual([]);
    // Created in this process (a writer that announces the change): found at once.
    await db('oauth_clients').insert(row(announced));
    announceClientChange(announced);
    expect(await find(announced)).toMatchObject({ clientId: announced });
    // Created by another node: found within the change poll.
    const elsewhere = unknownId();
    expect(await find(elsewhere)).toBeUndefined();
    await db('oauth_clients').insert(row(elsewhere));
    await vi.waitFor(async () => expect(await find(elsewhere)).toMatchObject({ clientId: elsewhere }), {
      timeout: clientChangePollMs * 2 + 2_000,
      interval: 50,
    });
  });
});

describe('memory', () => {
  it('keeps no request alive through the clients it cached', async () => {
    const { app, db } = service.service;
    const served = await serveWatchingRequests(app);
    try {
      // Ten clients, each first looked up (and cached) by one of these requests.
      for (let index = 0; index < 10; index++) {
        const { client, clientSecret } = await createServiceClient(db, ['service:crm.aggregates.read']);
        const response = await fetch(`${served.base}/oauth/token`, {
          method: 'POST',
          headers: {
            'content-type': 'application/x-www-form-urlencoded',
            authorization: basic(client.clientId, clientSecret!),
          },
          body: new URLSearchParams({ grant_type: 'client_credentials' }),
        });
        expect(response.status).toBe(200);
      }
    } finally {
      await served.stop();
    }
    expect(served.requests).toHaveLength(10);
    // A client cache keeps what it holds for 10 minutes. (The database's connections, opened and put
    // back by these requests, must not keep them either: src/outside-requests.ts.)
    await expectCollected(served.requests, 5_000);
  });
});
