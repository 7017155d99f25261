import { z } from 'zod';
import { requestInfo } from '../../http/request-info.js';
import { changePassword } from '../passwords/password-change.js';
import type { PasswordDeps } from '../passwords/password-deps.js';
import { requestPasswordReset, resetPassword, verifyPasswordResetCode } from '../passwords/password-reset.js';
import { activeSessionOf } from '../sessions/require-active-session.js';
import type { IdentityRoutes } from './identity-api.js';

const identifier = z.string().max(320).describe('Email address or phone number (E.164)');
const code = z.string().trim().min(1).max(20).describe('The 6-character code received');
const password = z.string().max(1024);

const forgotBody = z.object({
  identifier,
  transport: z.string().max(50).optional().describe('Transport chosen when several can deliver'),
  lang: z
    .string()
    .regex(/^[a-z]{2}(-[A-Za-z]{2})?$/)
    .default('en')
    .describe('Language of the reset page the link opens'),
});
const forgotResponse = z.union([
  z.object({
    status: z.literal('code_sent'),
    expiresInSeconds: z.number().int(),
    resendAfterSeconds: z.number().int(),
  }),
  z.object({
    status: z.literal('choose_transport'),
    transports: z.array(z.object({ name: z.string(), label: z.string() })),
  }),
]);
const verifyCodeBody = z.object({ identifier, code });
const resetBody = z.object({ identifier, code, password, passwordConfirmation: password });
const changeBody = z.object({
  currentPassword: password,
  newPassword: password,
  newPasswordConfirmation: password,
});
const revokedResponse = (status: string) =>
  z.object({ status: z.literal(status), revokedSessions: z.number().int() });

const errors = {
  400: { description: 'Invalid input, wrong code, weak password (error codes in the message)' },
  429: { description: 'Rate limit or lockout: Retry-After and details.retryAfterSeconds' },
};

/** /auth/password/*: forgotten password (forgot, verify-code, reset) and change. */
export function passwordRoutes(deps: PasswordDeps): IdentityRoutes {
  return (api) => {
    api.add(
      {
        method: 'post',
        path: '/auth/password/forgot',
        summary: 'Send a password reset code (and a link carrying it)',
        tags: ['passwords'],
        security: 'none',
        body: forgotBody,
        responses: {
          200: {
            description: 'Sent if an account has the identifier (the answer is the same otherwise)',
            schema: forgotResponse,
          },
          ...errors,
          502: { description: 'The transport could not take the message' },
        },
      },
      async (ctx, body) => {
        const { ip, addressBlock } = requestInfo(ctx);
        const outcome = await requestPasswordReset(deps, { ...body, ip, addressBlock });
        ctx.body =
          outcome.status === 'choose_transport'
            ? outcome
            : {
                status: outcome.status,
                expiresInSeconds: Math.round(
                  (outcome.expiresAt.getTime() - deps.clock.now().getTime()) / 1000,
                ),
                resendAfterSeconds: outcome.resendAfterSeconds,
              };
      },
    );

    api.add(
      {
        method: 'post',
        path: '/auth/password/verify-code',
        summary: 'Check a password reset code (it stays usable for the reset)',
        tags: ['passwords'],
        security: 'none',
        body: verifyCodeBody,
        responses: {
          200: { description: 'The code is right', schema: z.object({ valid: z.literal(true) }) },
          ...errors,
          410: { description: 'code_expired: expired, used, or 5 wrong attempts; ask for a new code' },
        },
      },
      async (ctx, body) => {
        await verifyPasswordResetCode(deps, { ...body, addressBlock: requestInfo(ctx).addressBlock });
        ctx.body = { valid: true };
      },
    );

    api.add(
      {
        method: 'post',
        path: '/auth/password/reset',
        summary: 'Set a new password with the code; signs out every session of the account',
        tags: ['passwords'],
        security: 'none',
        body: resetBody,
        responses: {
          200: { description: 'Password replaced', schema: revokedResponse('password_reset') },
          ...errors,
          410: { description: 'code_expired' },
        },
      },
      async (ctx, body) => {
        const result = await resetPassword(deps, { ...body, ...requestInfo(ctx) });
        ctx.body = { status: 'password_reset', ...result };
      },
    );

    api.add(
      {
        method: 'post',
        path: '/auth/password/change',
        summary: 'Change the password (current one required); signs out the other sessions',
        tags: ['passwords'],
        security: 'bearer',
        body: changeBody,
        responses: {
          200: { description: 'Password changed', schema: revokedResponse('password_changed') },
          ...errors,
          401: { description: 'No valid main-auth access token, or its session has ended' },
          409: { description: 'password_not_set: the account has no password yet' },
        },
      },
      async (ctx, body) => {
        const session = activeSessionOf(ctx);
        const result = await changePassword(deps, {
          ...body,
          ...requestInfo(ctx),
          userId: session.userId,
          sessionId: session.id,
        });
        ctx.body = { status: 'password_changed', ...result };
      },
    );
  };
}
