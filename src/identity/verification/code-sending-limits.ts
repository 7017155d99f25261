import { tooManyRequests } from '../../http/api-error.js';
import { RateLimitExceeded, type RateLimitRule, type RateLimits } from '../../http/rate-limit.js';
import { defaultRateLimitRule } from '../../defaults.js';

/**
 * Spec (Limits, code sending): 3 codes per identifier per 10 minutes, 10 per IP (an IPv6 client's /64),
 * 60 s between resends.
 */
export const codeSendingLimits = {
  perIdentifier: defaultRateLimitRule('code-send-identifier'),
  perIp: defaultRateLimitRule('code-send-ip'),
  resendCooldown: defaultRateLimitRule('code-send-cooldown'),
} satisfies Record<string, RateLimitRule>;

export const resendAfterSeconds = codeSendingLimits.resendCooldown.durationSeconds;

/**
 * Counts one code about to be sent against the three limits (atomic counters of the shared store), in
 * this order: the IP (it made the request, whatever happens next), the resend cooldown (so a too-early
 * resend does not spend the identifier's budget), then the identifier. 429 with Retry-After otherwise.
 */
export async function enforceCodeSendingLimits(
  rateLimits: RateLimits,
  request: { identifier: string; addressBlock: string },
): Promise<void> {
  try {
    await rateLimits.consume(codeSendingLimits.perIp, request.addressBlock);
    await rateLimits.consume(codeSendingLimits.resendCooldown, request.identifier);
    await rateLimits.consume(codeSendingLimits.perIdentifier, request.identifier);
  } catch (error) {
    if (error instanceof RateLimitExceeded) {
      const wait = error.retryAfterSeconds;
      const message =
        error.rule.name === codeSendingLimits.resendCooldown.name
          ? `A code was just sent. You can ask for another one in ${wait} seconds.`
          : `Too many codes were requested. Try again in ${wait} seconds.`;
      throw tooManyRequests(wait, message);
    }
    throw error;
  }
}
