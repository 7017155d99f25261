import { z } from 'zod';
import { ApiError } from '../../../http/api-error.js';
import { verifyUserTotp, type TotpDependencies } from '../../auth-methods/totp-method.js';
import {
  assertLoginAllowed,
  judgedOrAbandoned,
  recordLoginFailure,
  recordLoginSuccess,
} from '../../brute-force/login-protection.js';
import { loginAttemptOf } from '../login-attempt.js';
import type { AuthFlowStep } from '../step.js';

/**
 * Step `totp` (the TOTP auth_method plugin's step): a code from the user's authenticator app. A wrong
 * code, a code used before and a user without the method get the same answer. Guessing is bounded by
 * the same brute-force protection as the password (account lockout ladder, IP throttling), checked
 * before the code is looked at.
 */
export function createTotpStep(deps: TotpDependencies): AuthFlowStep<{ code: string }> {
  return {
    id: 'totp',
    authenticates: true,
    input: z.object({ code: z.string().trim().min(1).max(16) }),
    async run(context, { code }) {
      const { db, clock, request } = context;
      const attempt = loginAttemptOf(context, 'totp');
      const { userId } = attempt;
      const identifier = attempt.identifier ?? '';
      const protection = { db, clock };
      const claim = await assertLoginAllowed(protection, attempt);
      const verified =
        userId !== undefined &&
        (await judgedOrAbandoned(protection, claim, () =>
          verifyUserTotp(db, deps, userId, code, clock.now()),
        ));
      if (!userId || !verified) {
        await recordLoginFailure(protection, { ...attempt, identifier, ...request, claim });
        throw new ApiError(401, 'invalid_code', 'The code is not right. Try again.');
      }
      await recordLoginSuccess(protection, { ...attempt, userId, ...request, method: 'totp', claim });
      return { userId, authMethod: 'otp' };
    },
    screen: () => ({
      title: 'Enter the code from your authenticator app',
      fields: [
        {
          name: 'code',
          type: 'one-time-code',
          label: 'Code',
          required: true,
          autocomplete: 'one-time-code',
        },
      ],
    }),
  };
}
