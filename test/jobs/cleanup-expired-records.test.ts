import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256 } from '../../src/crypto/digest.js';
import { cleanupExpiredRecords } from '../../src/jobs/cleanup-expired-records.js';
import { userWithTokens } from '../support/sign-in.js';
import { startTestService, type TestService } from '../support/test-service.js';

let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service?.close());

const day = 24 * 60 * 60 * 1000;

describe('hourly cleanup of expired records', () => {
  it('deletes what expired and keeps what is still valid', async () => {
    const { db } = service.service;
    const { client, tokens } = await userWithTokens(service);
    const now = new Date();
    await db('qr_login_requests').insert({
      token_hash: sha256('qr-token'),
      expires_at: new Date(now.getTime() + 120_000),
      created_at: now,
    });
    const live = {
      codes: await db('authorization_codes').where({ client_id: client.clientId }).select('id'),
    };
    expect(live.codes).toHaveLength(1);
    // Nothing has expired yet.
    const first = await cleanupExpiredRecords(db, now);
    expect(first?.oauth_refresh_tokens).toBe(0);
    expect(await db('authorization_codes').where({ client_id: client.clientId })).toHaveLength(1);

    // 31 days later: the code (10 min), the refresh token (30 d), the session and interaction are gone.
    const later = new Date(now.getTime() + 31 * day);
    const deleted = await cleanupExpiredRecords(db, later);
    expect(deleted).toMatchObject({
      authorization_codes: expect.any(Number),
      oauth_refresh_tokens: expect.any(Number),
    });
    expect(await db('authorization_codes').where({ client_id: client.clientId })).toHaveLength(0);
    expect(
      await db('oauth_refresh_tokens').where({ token_hash: sha256(tokens.refresh_token!) }),
    ).toHaveLength(0);
    expect((await db('oidc_payloads').where('expires_at', '<', later)).length).toBe(0);
    // A QR sign-in request is gone once expired, whether or not it was used.
    expect(deleted).toMatchObject({ qr_login_requests: 1 });
    expect(await db('qr_login_requests')).toHaveLength(0);
    // Users and clients are not expiring records.
    expect(await db('oauth_clients').where({ client_id: client.clientId })).toHaveLength(1);
  });

  it('is run by one node at a time: concurrent runs do not fail, at most one does the work', async () => {
    const { db } = service.service;
    const results = await Promise.all([
      cleanupExpiredRecords(db, new Date()),
      cleanupExpiredRecords(db, new Date()),
    ]);
    expect(results.filter((result) => result !== undefined).length).toBeGreaterThanOrEqual(1);
  });
});
