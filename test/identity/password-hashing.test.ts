import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestFrom } from '../../src/http/request-info.js';
import { findPasswordHash } from '../../src/identity/passwords/password-credential.js';
import { uniqueEmail } from '../support/fixtures.js';
import { uniqueIp } from '../support/identity-api-client.js';
import { startTestService, testPasswordHashing, type TestService } from '../support/test-service.js';

// Tests run their services at cheap argon2 parameters; these two show what a service without the
// setting does (production's, OWASP's m=19456 KiB, t=2, p=1) and that the setting is what applies.
let atDefaults: TestService;
let cheap: TestService;
beforeAll(async () => {
  [atDefaults, cheap] = await Promise.all([
    // An empty override leaves every parameter at src/defaults.ts, as createIdentityService without one.
    startTestService({ settings: { passwordHashing: {} } }),
    startTestService({ settings: { passwordHashing: testPasswordHashing } }),
  ]);
});
afterAll(() => Promise.all([atDefaults?.close(), cheap?.close()]));

/** Registers an account with a password through the flow engine; answers its stored hash. */
async function registeredHash(service: TestService): Promise<string | undefined> {
  const { flows, developmentMessages, db } = service.service;
  const request = requestFrom(uniqueIp(), 'password hashing test');
  const email = uniqueEmail();
  const started = await flows.start('registration', request);
  const identified = await flows.submit(started.session.id, 'phone-email', { identifier: email }, request);
  if (identified.status !== 'in_progress') throw new Error('expected the code step');
  const code = developmentMessages.latestTo(email)!.code;
  const verified = await flows.submit(identified.session.id, 'otp-code', { code }, request);
  if (verified.status !== 'in_progress') throw new Error('expected the password step');
  const done = await flows.submit(
    verified.session.id,
    'password',
    { password: 'a long enough secret' },
    request,
  );
  expect(done.status).toBe('completed');
  const user = await db('users').where({ email }).first('id');
  return findPasswordHash(db, user.id);
}

describe('argon2id parameters of password hashes', () => {
  it('are production’s unless a service sets them', async () => {
    expect(atDefaults.service.settings.passwordHashing).toEqual({
      memoryCost: 19456,
      timeCost: 2,
      parallelism: 1,
    });
    expect(await registeredHash(atDefaults)).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
  });

  it('are the service’s own when it sets them', async () => {
    expect(await registeredHash(cheap)).toMatch(/^\$argon2id\$v=19\$m=1024,t=1,p=1\$/);
  });
});
