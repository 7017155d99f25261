import argon2 from 'argon2';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { ApiError } from '../../src/http/api-error.js';
import { requestFrom } from '../../src/http/request-info.js';
import { findPasswordHash, savePasswordHash } from '../../src/identity/passwords/password-credential.js';
import { verifyPassword } from '../../src/identity/passwords/password-hash.js';
import { createTestUser, uniqueEmail } from '../support/fixtures.js';
import { uniqueIp } from '../support/identity-api-client.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { IdentityClient, loginFrom } from './support/identity-client.js';

let service: TestService;
beforeAll(async () => {
  service = await startTestService({ env: { TRUST_PROXY: 'true' } });
});
afterAll(() => service?.close());
afterEach(() => vi.restoreAllMocks());

/** "Café crème naïve": composed (NFC, what most keyboards send) and decomposed (NFD, e.g. macOS file names). */
const composed = 'Caf\u00e9 cr\u00e8me na\u00efve';
const decomposed = composed.normalize('NFD');

async function loginStatus(identifier: string, password: string): Promise<number> {
  const { flows } = service.service;
  const request = requestFrom(uniqueIp(), 'normalization test');
  try {
    const started = await flows.start('login', request);
    const identified = await flows.submit(started.session.id, 'phone-email', { identifier }, request);
    if (identified.status !== 'in_progress') throw new Error('expected the password step');
    await flows.submit(identified.session.id, 'password', { password }, request);
    return 200;
  } catch (error) {
    if (error instanceof ApiError) return error.status;
    throw error;
  }
}

describe('passwords are Unicode-normalized (NFKC) when set and when checked', () => {
  it('a password set composed signs in typed decomposed, and the other way round', async () => {
    expect(decomposed).not.toBe(composed);
    const setComposed = await createTestUser(service.service.db, { password: composed });
    expect(await loginStatus(setComposed.email!, decomposed)).toBe(200);
    const setDecomposed = await createTestUser(service.service.db, { password: decomposed });
    expect(await loginStatus(setDecomposed.email!, composed)).toBe(200);
    expect(await loginStatus(setDecomposed.email!, 'Cafe creme naive')).toBe(401);
  });

  it('registration stores the normalized password', async () => {
    const client = new IdentityClient(service);
    const email = uniqueEmail('unicode');
    const ip = uniqueIp();
    const started = await client.start('registration', { ip });
    const identified = await client.pass(started.sessionId, 'phone-email', { identifier: email }, { ip });
    const code = service.service.developmentMessages.latestTo(email)!.code;
    const verified = await client.pass(identified.sessionId, 'otp-code', { code }, { ip });
    loginFrom(await client.step(verified.sessionId, 'password', { password: decomposed }, { ip }));
    expect(await loginStatus(email, composed)).toBe(200);
  });

  it('a hash made before normalization still signs in, and is replaced by the normalized one', async () => {
    const user = await createTestUser(service.service.db, { password: null });
    // What the service stored before: the argon2id hash of the password as typed.
    const legacy = await argon2.hash(decomposed, {
      type: argon2.argon2id,
      memoryCost: 19456,
      timeCost: 2,
      parallelism: 1,
    });
    await savePasswordHash(service.service.db, user.id, legacy, new Date());

    expect(await loginStatus(user.email!, decomposed)).toBe(200);
    const upgraded = await findPasswordHash(service.service.db, user.id);
    expect(upgraded).not.toBe(legacy);
    expect(await argon2.verify(upgraded!, composed.normalize('NFKC'))).toBe(true);
    // From now on every form of the password signs in.
    expect(await loginStatus(user.email!, composed)).toBe(200);
    expect(await loginStatus(user.email!, 'not the password')).toBe(401);
  });

  it('an unknown identifier costs as many argon2 verifications as a wrong password of a real account', async () => {
    const hash = (await findPasswordHash(
      service.service.db,
      (await createTestUser(service.service.db, { password: composed })).id,
    ))!;
    const verifications = vi.spyOn(argon2, 'verify');
    // A password that normalization changes is checked twice (normalized, then as typed for hashes
    // made before normalization): so is the decoy.
    const cases = [
      { typed: 'plain wrong password', checks: 1 },
      { typed: decomposed.replace('Caf', 'Kaf'), checks: 2 },
    ];
    for (const { typed, checks } of cases) {
      verifications.mockClear();
      expect(await verifyPassword(hash, typed)).toBe(false);
      expect(verifications.mock.calls.length, typed).toBe(checks);
      verifications.mockClear();
      expect(await verifyPassword(undefined, typed)).toBe(false);
      expect(verifications.mock.calls.length, typed).toBe(checks);
    }
  });
});
