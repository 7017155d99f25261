/**
 * Post-registration onboarding (spec: client-facing pages), in this order: the name (not skippable),
 * a photo, the language, a password (only for an account without one, e.g. registered by code); the
 * last three may be skipped.
 */
export const onboardingSteps = ['name', 'avatar', 'language', 'password'] as const;
export type OnboardingStep = (typeof onboardingSteps)[number];

/** The step after `step` for this account; undefined: onboarding is over. */
export function nextOnboardingStep(step: OnboardingStep, account: { hasPassword: boolean }) {
  const rest = onboardingSteps.slice(onboardingSteps.indexOf(step) + 1);
  return rest.find((next) => next !== 'password' || !account.hasPassword);
}
