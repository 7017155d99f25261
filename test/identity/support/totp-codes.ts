import { generate } from 'otplib';
import { expect } from 'vitest';
import type { Clock } from '../../../src/clock.js';
import type { IdentityClient, Login } from './identity-client.js';

/** The code an authenticator app shows for `secret` at `at` (a TOTP step of 30 seconds). */
export function totpCode(secret: string, at: Date): Promise<string> {
  return generate({ secret, epoch: Math.floor(at.getTime() / 1000) });
}

/** Sets up TOTP for a signed-in user through the security settings; answers the secret. */
export async function setUpTotp(client: IdentityClient, login: Login, clock: Clock): Promise<string> {
  const setup = await client.post<{ secret: string; otpauthUrl: string; status: string }>(
    '/security/auth-methods/totp/setup',
    undefined,
    { token: login.accessToken },
  );
  expect(setup.status, JSON.stringify(setup.body)).toBe(200);
  expect(setup.body.status).toBe('pending_verification');
  expect(setup.body.otpauthUrl).toMatch(/^otpauth:\/\/totp\//);
  const verify = await client.post(
    '/security/auth-methods/totp/verify',
    { code: await totpCode(setup.body.secret, clock.now()) },
    { token: login.accessToken },
  );
  expect(verify.status, JSON.stringify(verify.body)).toBe(200);
  return setup.body.secret;
}
