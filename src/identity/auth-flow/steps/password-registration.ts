import { z } from 'zod';
import { ApiError } from '../../../http/api-error.js';
import { hashPassword } from '../../passwords/password-hash.js';
import { assertPasswordAcceptable } from '../../passwords/password-policy.js';
import type { AuthFlowStep } from '../step.js';

const formFlag = z.preprocess((value) => (value === 'true' || value === 'on' ? true : value), z.boolean());

/**
 * Step `password` of the registration flow: the new account's password, checked against the password
 * policy. Where the policy allows (the step is not mandatory in the registration funnel) the user may
 * skip it and sign in with codes to the verified contact instead; whether that leaves the account a
 * way to sign in is checked when the account is created.
 */
export const passwordRegistrationStep: AuthFlowStep<{
  password?: string | undefined;
  skip?: boolean | undefined;
}> = {
  id: 'password',
  flows: ['registration'],
  input: z.object({ password: z.string().max(1024).optional(), skip: formFlag.optional() }),
  async run({ session, passwordHashing }, { password, skip }) {
    if (!password) {
      const optional = session.plan.steps?.password?.mandatory === false;
      if (!skip || !optional) {
        throw new ApiError(400, 'password_required', 'Choose a password for your account.');
      }
      return { tempData: { passwordHash: null } };
    }
    const identifier = typeof session.tempData.identifier === 'string' ? [session.tempData.identifier] : [];
    assertPasswordAcceptable(password, identifier);
    return { tempData: { passwordHash: await hashPassword(password, passwordHashing) } };
  },
  screen: ({ session }) => ({
    title: 'Choose a password',
    description:
      session.plan.steps?.password?.mandatory === false
        ? 'At least 8 characters. You may skip this and sign in with codes instead.'
        : 'At least 8 characters.',
    fields: [
      {
        name: 'password',
        type: 'password',
        label: 'Password',
        required: session.plan.steps?.password?.mandatory !== false,
        autocomplete: 'new-password',
      },
    ],
    data: { optional: session.plan.steps?.password?.mandatory === false },
  }),
};
