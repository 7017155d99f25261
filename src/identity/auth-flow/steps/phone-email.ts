import { z } from 'zod';
import { ApiError } from '../../../http/api-error.js';
import { parseIdentifier } from '../../users/contact.js';
import { findUserByIdentifier } from '../../users/user.js';
import type { AuthFlowStep } from '../step.js';

/**
 * Built-in step `phone-email`: who is signing in. It accepts any well-formed email or phone and never
 * says whether an account exists; an unknown identifier fails later, at the password, exactly like a
 * wrong password.
 */
export const phoneEmailStep: AuthFlowStep<{ identifier: string }> = {
  id: 'phone-email',
  flows: ['login'],
  input: z.object({ identifier: z.string().max(320) }),
  async run({ db }, { identifier }) {
    const parsed = parseIdentifier(identifier);
    if (!parsed) {
      throw new ApiError(
        400,
        'invalid_identifier',
        'Enter an email address or a phone number in international form.',
      );
    }
    const user = await findUserByIdentifier(db, parsed);
    return {
      userId: user?.status === 'active' ? user.id : undefined,
      tempData: { identifier: parsed.value, identifierKind: parsed.kind },
    };
  },
  screen: ({ session }) => ({
    title: session.flow === 'registration' ? 'Create an account' : 'Sign in',
    fields: [
      { name: 'identifier', type: 'text', label: 'Email or phone', required: true, autocomplete: 'username' },
    ],
  }),
};
