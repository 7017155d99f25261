import type { FlowKind } from './flow-session.js';

/**
 * The step ids the service registers itself, per flow (the composition root, src/service.ts, registers
 * their implementations; a test keeps the two in step). The CLI checks funnels against these: it runs
 * without the service, so it can't know a plugin's steps — those are set through the admin API.
 */
export const builtInStepIds: Record<FlowKind, readonly string[]> = {
  login: [
    'phone-email',
    'password',
    'otp-code',
    'consent',
    'totp',
    'mfa-setup',
    'account-selection',
    'qr',
    'oauth',
  ],
  registration: ['phone-email', 'password', 'otp-code', 'consent', 'totp', 'profile'],
};

/**
 * The built-in login steps that prove who signs in (`authenticates` on their implementation; the same
 * test keeps the two equal): a login funnel without one of them would let nobody in.
 */
export const builtInAuthenticatingLoginStepIds: readonly string[] = [
  'password',
  'otp-code',
  'totp',
  'qr',
  'oauth',
];

/** The sign-in methods (auth_method slugs) the service ships (src/identity/auth-methods/built-in-methods.ts). */
export const builtInAuthMethodTypes: readonly string[] = ['password', 'email_otp', 'sms_otp', 'totp'];

/**
 * The forced-setup step (spec: mfa-setup): the engine queues it after a login's steps for each mandatory
 * method the user has not set up (flow-engine.ts). It is never placed in a funnel: there, with nothing
 * queued to set up, it failed every login (a 500 after the password; 401 at the start when first).
 */
export const forcedSetupStepId = 'mfa-setup';
