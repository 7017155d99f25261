import { z } from 'zod';
import { ApiError } from '../../../http/api-error.js';
import { parseIdentifier } from '../../users/contact.js';
import type { AuthFlowStep } from '../step.js';

/**
 * Step `phone-email` of the registration flow: the email or phone the new account will have. It does
 * not look for an existing account (that would tell anyone who is registered): the contact is proven
 * with a code first, and only then is "an account already exists" said, to its owner.
 */
export const phoneEmailRegistrationStep: AuthFlowStep<{ identifier: string }> = {
  id: 'phone-email',
  flows: ['registration'],
  input: z.object({ identifier: z.string().max(320) }),
  async run(_context, { identifier }) {
    const parsed = parseIdentifier(identifier);
    if (!parsed) {
      throw new ApiError(
        400,
        'invalid_identifier',
        'Enter an email address or a phone number in international form.',
      );
    }
    return { tempData: { identifier: parsed.value, identifierKind: parsed.kind } };
  },
  screen: () => ({
    title: 'Create an account',
    fields: [
      { name: 'identifier', type: 'text', label: 'Email or phone', required: true, autocomplete: 'username' },
    ],
  }),
};
