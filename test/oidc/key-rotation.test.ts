import crypto from 'node:crypto';
import { decodeProtectedHeader, SignJWT } from 'jose';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { generateRsaPrivateKeyPem } from '../../src/keys/development-secrets.js';
import { oidc } from '../support/relying-party.js';
import { userWithTokens } from '../support/sign-in.js';
import { startTestService, testSecrets, type TestService } from '../support/test-service.js';

let before: TestService;
let after: TestService;
const newKey = generateRsaPrivateKeyPem();

beforeAll(async () => {
  before = await startTestService();
});
afterAll(async () => {
  await after?.close();
  await before?.close();
});
afterEach(() => {
  vi.useRealTimers();
});

async function jwks(node: TestService): Promise<string[]> {
  const { keys } = (await (await fetch(node.url('/.well-known/jwks.json'))).json()) as {
    keys: { kid: string }[];
  };
  return keys.map((key) => key.kid).sort();
}

async function userinfoStatus(node: TestService, token: string): Promise<number> {
  return (await fetch(node.url('/oauth/userinfo'), { headers: { authorization: `Bearer ${token}` } })).status;
}

describe('signing key rotation', () => {
  it('signs with the new key after a restart, keeps the old one published for 24 hours, then drops it', async () => {
    const oldKid = before.service.keys.oidc.kid;
    const mainAuthKid = before.service.keys.mainAuth.kid;
    const signedBefore = await userWithTokens(before);
    expect(decodeProtectedHeader(signedBefore.tokens.access_token).kid).toBe(oldKid);

    // The service restarts with a new OIDC_PRIVATE_KEY: same address, database and main-auth key. (The
    // old instance keeps running without its listener, like a node of the cluster not yet restarted.)
    const port = Number(new URL(before.issuer).port);
    before.server.closeAllConnections();
    await new Promise((resolve) => before.server.close(resolve));
    after = await startTestService({
      database: before.database,
      port,
      secrets: { ...testSecrets(), oidcPrivateKey: newKey },
    });
    const newKid = after.service.keys.oidc.kid;
    expect(newKid).not.toBe(oldKid);

    // The new kid signs; both nodes publish the same set: new, old (for 24 h) and the main-auth key.
    const signedAfter = await userWithTokens(after);
    expect(decodeProtectedHeader(signedAfter.tokens.access_token).kid).toBe(newKid);
    expect(decodeProtectedHeader(signedAfter.tokens.id_token!).kid).toBe(newKid);
    expect(await jwks(after)).toEqual([oldKid, newKid, mainAuthKid].sort());
    await before.service.keys.published.refresh();
    const otherNode = JSON.parse(await before.service.keys.published.jwksJson()) as {
      keys: { kid: string }[];
    };
    expect(otherNode.keys.map((key) => key.kid).sort()).toEqual(await jwks(after));

    // Tokens signed by the previous key still verify, at our endpoints and for relying parties.
    expect(await userinfoStatus(after, signedBefore.tokens.access_token)).toBe(200);
    await expect(
      oidc.fetchUserInfo(signedBefore.config, signedBefore.tokens.access_token, signedBefore.user.id),
    ).resolves.toHaveProperty('sub');
    // A logout with an id_token_hint from before the rotation works.
    const logout = await fetch(
      `${after.url('/oauth/end_session')}?${new URLSearchParams({ id_token_hint: signedBefore.tokens.id_token! })}`,
      { redirect: 'manual' },
    );
    expect(logout.status).toBeLessThan(400);

    // A token the old key signs (e.g. by a node not yet restarted) with a long life, to see the key go.
    // (Its claims are of the authorization after the rotation: the logout above revoked the other one.)
    const claims = JSON.parse(
      Buffer.from(signedAfter.tokens.access_token.split('.')[1]!, 'base64url').toString(),
    );
    const oldPem = testSecrets().oidcPrivateKey;
    const lateToken = await new SignJWT({ ...claims, exp: Math.floor(Date.now() / 1000) + 2 * 24 * 3600 })
      .setProtectedHeader({ alg: 'RS256', typ: 'at+jwt', kid: oldKid })
      .sign(crypto.createPrivateKey(oldPem));
    expect(await userinfoStatus(after, lateToken)).toBe(200);

    // 24 hours and a minute later the old key is gone from the set and its tokens fail.
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 24 * 3600 * 1000 + 60_000 });
    await after.service.keys.published.refresh();
    expect(await jwks(after)).toEqual([newKid, mainAuthKid].sort());
    expect(await userinfoStatus(after, lateToken)).toBe(401);
  });
});
