import { generateSecret, generateURI, verify } from 'otplib';

/**
 * TOTP (RFC 6238) through otplib: SHA-1, 6 digits, 30-second steps, the parameters every authenticator
 * app supports. A code is accepted from the current step or the one before or after (clock drift), and
 * never twice: the caller keeps the last accepted step and passes it as `afterTimeStep`.
 */
export const totpPeriodSeconds = 30;

export function newTotpSecret(): string {
  // 20 bytes (160 bits), RFC 4226's recommended length.
  return generateSecret({ length: 20 });
}

export function totpUri(secret: string, account: string, issuer: string): string {
  return generateURI({ issuer, label: account, secret });
}

/** The time step the code belongs to, or undefined when it is not a valid code now. */
export async function verifyTotpCode(
  secret: string,
  code: string,
  now: Date,
  afterTimeStep?: number,
): Promise<number | undefined> {
  try {
    const result = await verify({
      secret,
      token: code,
      epoch: Math.floor(now.getTime() / 1000),
      epochTolerance: totpPeriodSeconds,
      ...(afterTimeStep === undefined ? {} : { afterTimeStep }),
    });
    // TOTP results carry the time step (the union type also covers HOTP's).
    return result.valid && 'timeStep' in result ? result.timeStep : undefined;
  } catch {
    // Malformed code (wrong length, not digits): not valid.
    return undefined;
  }
}
