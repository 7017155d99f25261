import { z } from 'zod';
import { ApiError } from '../../http/api-error.js';
import { requestInfo } from '../../http/request-info.js';
import { setFirstPassword, type FirstPasswordDeps } from '../passwords/first-password.js';
import { activeSessionOf } from '../sessions/require-active-session.js';
import { holdUnrevokedSession } from '../sessions/sessions.js';
import type { IdentityRoutes } from './identity-api.js';

// The policy (length, common passwords, the user's own contacts) answers weak_password in the service.
const password = z.string().max(1024);
const firstPasswordBody = z
  .object({ newPassword: password, newPasswordConfirmation: password })
  .meta({ id: 'FirstPasswordRequest' });

/** POST /security/password: an account without a password (e.g. OAuth-only) sets its first one. */
export function firstPasswordRoutes(deps: FirstPasswordDeps): IdentityRoutes {
  return (api) => {
    api.add(
      {
        method: 'post',
        path: '/security/password',
        summary: 'Set a first password on an account that has none (signed up through a provider)',
        tags: ['Security'],
        security: 'bearer',
        reauthentication: true,
        body: firstPasswordBody,
        responses: {
          200: { description: 'Password set', schema: z.object({ status: z.literal('password_set') }) },
          400: { description: 'Weak password, or the confirmation differs' },
          401: {
            description:
              'No valid main-auth access token, its session has ended, or reauthentication_required',
          },
          409: { description: 'password_already_set: change it with the current one instead' },
        },
      },
      async (ctx, body) => {
        const session = activeSessionOf(ctx);
        await setFirstPassword(deps, {
          ...body,
          userId: session.userId,
          request: requestInfo(ctx),
          // The session ended while the password was hashed (a logout, a revocation, a sign-out
          // everywhere): a copy of its token writes nothing.
          holdStanding: async (trx) =>
            (await holdUnrevokedSession(trx, session.userId, session.id))
              ? undefined
              : new ApiError(401, 'session_ended', 'This session has ended. Sign in again.'),
        });
        ctx.body = { status: 'password_set' };
      },
    );
  };
}
