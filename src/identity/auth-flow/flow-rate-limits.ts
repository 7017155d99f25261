import type { RateLimitRule } from '../../http/rate-limit.js';

/** Spec: Limits, rate limits on identity endpoints (the interaction pages apply the step limit too). */
export const flowStartRateLimit: RateLimitRule = {
  name: 'identity-flow-start',
  points: 10,
  durationSeconds: 60,
};
/** Keyed by IP + flow session: caps the guesses one flow session gets. */
export const flowStepRateLimit: RateLimitRule = {
  name: 'identity-flow-step',
  points: 10,
  durationSeconds: 60,
};
