/**
 * Why a third-party sign-in could not finish. Each reason has a page in words (en/ru, messages
 * `federation.error.<reason>`); nothing is written to the database when one is raised.
 */
export const federationErrorReasons = [
  'denied',
  'bad_state',
  'bad_nonce',
  'expired_code',
  'jwks_mismatch',
  'expired_attempt',
  'upstream_error',
  'upstream_unavailable',
  'missing_subject',
  'unknown_provider',
  'subject_linked_elsewhere',
  'not_linked_to_this_account',
  'account_disabled',
  'sign_in_first',
  'second_factor_required',
] as const;
export type FederationErrorReason = (typeof federationErrorReasons)[number];

export class FederationError extends Error {
  constructor(
    readonly reason: FederationErrorReason,
    detail?: string,
  ) {
    super(detail ? `${reason}: ${detail}` : reason);
    this.name = 'FederationError';
  }

  /** 4xx: the person or the upstream did something we refuse; 502: the upstream failed us. */
  get status(): number {
    return this.reason === 'upstream_unavailable' || this.reason === 'upstream_error' ? 502 : 400;
  }
}
