import type { RateLimitRule } from '../../http/rate-limit.js';
import { defaultRateLimitRule } from '../../defaults.js';

/** Spec: Limits, rate limits on identity endpoints (the interaction pages apply the step limit too). */
export const flowStartRateLimit: RateLimitRule = defaultRateLimitRule('identity-flow-start');
/** Keyed by IP + flow session: caps the guesses one flow session gets. */
export const flowStepRateLimit: RateLimitRule = defaultRateLimitRule('identity-flow-step');
