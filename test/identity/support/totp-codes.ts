import { generate } from 'otplib';

/** The code an authenticator app shows for `secret` at `at` (a TOTP step of 30 seconds). */
export function totpCode(secret: string, at: Date): Promise<string> {
  return generate({ secret, epoch: Math.floor(at.getTime() / 1000) });
}
