import { z } from 'zod';
import { ApiError } from '../../../http/api-error.js';
import {
  claimLoginAttempt,
  judgedOrAbandoned,
  recordLoginFailure,
  recordLoginSuccess,
} from '../../brute-force/login-protection.js';
import { passwordHashRead } from '../../passwords/password-credential.js';
import { verifyUserPassword } from '../../passwords/verify-user-password.js';
import { loginAttemptOf } from '../login-attempt.js';
import type { AuthFlowStep } from '../step.js';

export const invalidCredentials = () =>
  new ApiError(401, 'invalid_credentials', 'The email, phone or password is not right.');

/**
 * Built-in step `password`. Brute-force protection first: a locked source, account or throttled IP
 * gets the 429 before the password is looked at, so the answer is the same for a right or a wrong
 * password. Unknown identifier, user without password and wrong password give the same answer after
 * the same work (a decoy argon2 verification), so the answer reveals nothing.
 */
export const passwordStep: AuthFlowStep<{ password: string }> = {
  id: 'password',
  authenticates: true,
  input: z.object({ password: z.string().min(1).max(1024) }),
  async run(context, { password }) {
    const { db, clock, request, passwordHashing } = context;
    const attempt = loginAttemptOf(context, 'password');
    const { userId } = attempt;
    const identifier = attempt.identifier ?? '';
    const protection = { db, clock };
    // The password hash is read in the claim's statement (one round trip); none for an unknown user.
    const { claim, read } = await claimLoginAttempt(
      protection,
      attempt,
      userId ? passwordHashRead(userId) : undefined,
    );
    const known = { storedHash: typeof read === 'string' ? read : undefined };
    const verified = await judgedOrAbandoned(protection, claim, () =>
      verifyUserPassword(db, userId, password, clock.now(), passwordHashing, known),
    );
    if (!verified || !userId) {
      await recordLoginFailure(protection, { ...attempt, identifier, ...request, claim });
      throw invalidCredentials();
    }
    await recordLoginSuccess(protection, { ...attempt, userId, ...request, method: 'password', claim });
    return { userId, authMethod: 'pwd' };
  },
};
