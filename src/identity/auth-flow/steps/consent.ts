import { z } from 'zod';
import { defineSetting, readSetting } from '../../../platform/settings/platform-settings.js';
import type { AuthFlowStep } from '../step.js';

/** The terms the `consent` step asks to accept (platform-owned: the platform publishes the terms). */
export const termsSetting = defineSetting(
  'identity.terms',
  z.object({ url: z.string().min(1).max(2000), version: z.string().min(1).max(50) }),
  { url: '/terms', version: '1' },
);

/** A checkbox posts `on`; JSON clients send `true`. Anything else is not an acceptance. */
const accepted = z.union([z.literal(true), z.literal('on'), z.literal('true')], {
  error: 'Accept the terms to continue.',
});

/**
 * Built-in step `consent`: the user accepts the terms of use (an extended funnel adds it to login or
 * registration). What was accepted (version, time) is kept in the flow for its finisher.
 */
export const consentStep: AuthFlowStep<{ accept: true | 'on' | 'true' }> = {
  id: 'consent',
  input: z.object({ accept: accepted }),
  async run({ db, clock }) {
    const terms = await readSetting(db, termsSetting);
    return { tempData: { termsAccepted: { version: terms.version, at: clock.now().toISOString() } } };
  },
  async screen({ db }) {
    const terms = await readSetting(db, termsSetting);
    return {
      title: 'Terms of use',
      description: 'Read and accept the terms of use to continue.',
      fields: [{ name: 'accept', type: 'checkbox', label: 'I accept the terms of use', required: true }],
      data: { termsUrl: terms.url, termsVersion: terms.version },
    };
  },
};
