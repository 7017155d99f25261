import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256 } from '../../src/crypto/digest.js';
import { grantRole } from '../../src/identity/access/user-access.js';
import { createTestClient, createTestUser } from '../support/fixtures.js';
import { HttpBrowser } from '../support/http-browser.js';
import { completeAuthorization, discover, oidc } from '../support/relying-party.js';
import { startTestService, type TestService } from '../support/test-service.js';

let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service?.close());

async function signedIn(scope = 'openid profile email') {
  const { db } = service.service;
  const user = await createTestUser(db);
  const { client } = await createTestClient(db);
  const config = await discover(service.issuer, client.clientId);
  const { tokens } = await completeAuthorization(config, new HttpBrowser(service.issuer), {
    identifier: user.email!,
    password: user.password,
    parameters: { scope },
  });
  return { user, client, config, refreshToken: tokens.refresh_token! };
}

async function refresh(clientId: string, refreshToken: string) {
  const response = await fetch(service.url('/oauth/token'), {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'refresh_token',
      client_id: clientId,
      refresh_token: refreshToken,
    }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, string> };
}

describe('refresh_token grant', () => {
  it('rotates the refresh token at every use and chains the old record to the new one', async () => {
    const { user, config, refreshToken } = await signedIn();
    const first = await oidc.refreshTokenGrant(config, refreshToken);
    expect(first.refresh_token).toBeTruthy();
    expect(first.refresh_token).not.toBe(refreshToken);
    expect(first.claims()?.sub).toBe(user.id);
    const second = await oidc.refreshTokenGrant(config, first.refresh_token!);
    expect(second.refresh_token).not.toBe(first.refresh_token);

    const rows = await service.service
      .db('oauth_refresh_tokens')
      .where({ user_id: user.id })
      .orderBy('created_at');
    expect(rows).toHaveLength(3);
    expect(rows[0]).toMatchObject({ replaced_by_token_hash: sha256(first.refresh_token!) });
    expect(rows[0].revoked_at).toBeInstanceOf(Date);
    expect(rows[1]).toMatchObject({ replaced_by_token_hash: sha256(second.refresh_token!) });
    expect(rows[2]).toMatchObject({ replaced_by_token_hash: null, revoked_at: null });
    expect(new Set(rows.map((row) => row.token_family_id)).size).toBe(1);
    const lifetimeDays = (rows[2].expires_at.getTime() - rows[2].created_at.getTime()) / 86_400_000;
    expect(Math.round(lifetimeDays)).toBe(30);
  });

  it('treats a rotated-out token presented again as theft: invalid_grant and the whole family revoked', async () => {
    const { client, config, refreshToken } = await signedIn();
    const rotated = await oidc.refreshTokenGrant(config, refreshToken);
    const reuse = await refresh(client.clientId, refreshToken);
    expect(reuse.status).toBe(400);
    expect(reuse.body.error).toBe('invalid_grant');
    // The legitimate holder's newest token is dead too.
    const newest = await refresh(client.clientId, rotated.refresh_token!);
    expect(newest.status).toBe(400);
    expect(newest.body.error).toBe('invalid_grant');
  });

  it('lets exactly one of two parallel refreshes of one token succeed, and the reuse revokes the family', async () => {
    for (let attempt = 0; attempt < 3; attempt++) {
      const { client, refreshToken } = await signedIn();
      const results = await Promise.all([
        refresh(client.clientId, refreshToken),
        refresh(client.clientId, refreshToken),
      ]);
      const succeeded = results.filter((result) => result.status === 200);
      const failed = results.filter((result) => result.status !== 200);
      expect(succeeded).toHaveLength(1);
      expect(failed[0]).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
      const winnerToken = succeeded[0]!.body.refresh_token!;
      expect((await refresh(client.clientId, winnerToken)).status).toBe(400);
      const active = await service.service
        .db('oauth_refresh_tokens')
        .where({ client_id: client.clientId })
        .whereNull('revoked_at');
      // A token the winner wrote after the family was revoked may remain, but its grant is gone.
      expect(active.length).toBeLessThanOrEqual(1);
    }
  });

  it('refuses a refresh token presented by another client, without revoking it', async () => {
    const { client, refreshToken } = await signedIn();
    const { client: other } = await createTestClient(service.service.db);
    const stolen = await refresh(other.clientId, refreshToken);
    expect(stolen).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    expect((await refresh(client.clientId, refreshToken)).status).toBe(200);
  });

  it('refuses to refresh for a user who has been disabled', async () => {
    const { user, client, refreshToken } = await signedIn();
    await service.service.db('users').where({ id: user.id }).update({ status: 'disabled' });
    expect(await refresh(client.clientId, refreshToken)).toMatchObject({
      status: 400,
      body: { error: 'invalid_grant' },
    });
  });

  it('issues tokens from the user as they are now: a role given after sign-in is in the refreshed token', async () => {
    const { user, config, refreshToken } = await signedIn('openid profile email roles');
    await grantRole(service.service.db, user.id, 'super_admin');
    await service.service.db('users').where({ id: user.id }).update({ given_name: 'Renamed' });
    const refreshed = await oidc.refreshTokenGrant(config, refreshToken);
    expect(decodeJwt(refreshed.access_token)).toMatchObject({
      sub: user.id,
      roles: ['super_admin'],
      permissions: ['*'],
    });
    expect(refreshed.claims()).toMatchObject({ sub: user.id, email: user.email, given_name: 'Renamed' });
  });

  it('refuses a refresh token whose grant has expired or is gone', async () => {
    const { db } = service.service;
    const expired = await signedIn();
    await db('oidc_payloads')
      .where({ model: 'Grant', account_id: expired.user.id })
      .update({ expires_at: new Date(Date.now() - 1000) });
    expect(await refresh(expired.client.clientId, expired.refreshToken)).toMatchObject({
      status: 400,
      body: { error: 'invalid_grant' },
    });

    const gone = await signedIn();
    await db('oidc_payloads').where({ model: 'Grant', account_id: gone.user.id }).delete();
    expect(await refresh(gone.client.clientId, gone.refreshToken)).toMatchObject({
      status: 400,
      body: { error: 'invalid_grant' },
    });
  });

  it('refuses an unknown refresh token', async () => {
    const { client } = await signedIn();
    expect(await refresh(client.clientId, 'nope')).toMatchObject({
      status: 400,
      body: { error: 'invalid_grant' },
    });
  });
});
