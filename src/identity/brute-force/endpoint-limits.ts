import { RateLimitExceeded, type RateLimitRule, type RateLimits } from '../../http/rate-limit.js';

/** The identity rate limits of the spec's table for the password and verification endpoints. */
export const endpointLimits = {
  passwordForgot: { name: 'password-forgot', points: 5, durationSeconds: 60 * 60 },
  passwordVerifyCode: { name: 'password-verify-code', points: 10, durationSeconds: 60 },
  passwordReset: { name: 'password-reset', points: 5, durationSeconds: 60 * 60 },
  verifySend: { name: 'verify-send', points: 3, durationSeconds: 10 * 60 },
} satisfies Record<string, RateLimitRule>;

/** Counts one request against `rule` for `key`; 429 with Retry-After and the wait in the body. */
export async function enforceEndpointLimit(
  rateLimits: RateLimits,
  rule: RateLimitRule,
  key: string,
): Promise<void> {
  try {
    await rateLimits.consume(rule, key);
  } catch (error) {
    if (error instanceof RateLimitExceeded) throw error.toApiError();
    throw error;
  }
}
