import { RateLimitExceeded, type RateLimitRule, type RateLimits } from '../../http/rate-limit.js';
import { defaultRateLimitRule } from '../../defaults.js';

/** The identity rate limits of the spec's table for the password and verification endpoints. */
export const endpointLimits = {
  passwordForgot: defaultRateLimitRule('password-forgot'),
  passwordVerifyCode: defaultRateLimitRule('password-verify-code'),
  passwordReset: defaultRateLimitRule('password-reset'),
  verifySend: defaultRateLimitRule('verify-send'),
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
