import { z } from 'zod';
import { principalOf } from '../../http/bearer-auth.js';
import { requestInfo } from '../../http/request-info.js';
import {
  confirmContact,
  sendContactVerification,
  type ContactVerificationDeps,
} from '../verification/contact-verification.js';
import type { IdentityRoutes } from './identity-api.js';

const identifier = z.string().max(320).describe('Email address or phone number (E.164)');
const sendBody = z.object({
  identifier,
  transport: z.string().max(50).optional().describe('Transport chosen when several can deliver'),
});
const confirmBody = z.object({ identifier, code: z.string().trim().min(1).max(20) });

/** /auth/verify/*: add or confirm an email or phone on one's own account with a code. */
export function verificationRoutes(deps: ContactVerificationDeps): IdentityRoutes {
  const requester = (ctx: Parameters<typeof principalOf>[0]) => {
    const principal = principalOf(ctx);
    if (principal.kind !== 'user') throw new Error('main-auth principals are users');
    return { userId: principal.userId, ...requestInfo(ctx) };
  };
  return (api) => {
    api.add(
      {
        method: 'post',
        path: '/auth/verify/send',
        summary: 'Send a verification code to an email or phone to add to the account',
        tags: ['verification'],
        security: 'bearer',
        reauthentication: true,
        body: sendBody,
        responses: {
          200: {
            description: 'Code sent',
            schema: z.object({
              status: z.literal('code_sent'),
              expiresInSeconds: z.number().int(),
              resendAfterSeconds: z.number().int(),
            }),
          },
          400: { description: 'Invalid identifier or no transport for it' },
          401: {
            description:
              'No valid main-auth access token, its session has ended, or reauthentication_required',
          },
          409: {
            description:
              'already_verified (whether another account has the contact is said only by /auth/verify/confirm)',
          },
          429: { description: 'Rate or code-sending limit: Retry-After' },
          502: { description: 'The transport could not take the message' },
        },
      },
      async (ctx, body) => {
        const sent = await sendContactVerification(deps, requester(ctx), body);
        ctx.body = {
          status: 'code_sent',
          expiresInSeconds: Math.round((sent.expiresAt.getTime() - deps.clock.now().getTime()) / 1000),
          resendAfterSeconds: sent.resendAfterSeconds,
        };
      },
    );

    api.add(
      {
        method: 'post',
        path: '/auth/verify/confirm',
        summary: 'Confirm the code: the email or phone becomes a confirmed contact of the account',
        tags: ['verification'],
        security: 'bearer',
        body: confirmBody,
        responses: {
          200: {
            description: 'Confirmed',
            schema: z.object({
              status: z.literal('verified'),
              kind: z.enum(['email', 'phone']),
              value: z.string(),
            }),
          },
          400: { description: 'invalid_code (details.attemptsLeft) or invalid input' },
          401: { description: 'No valid main-auth access token, or its session has ended' },
          409: { description: 'identifier_taken: another account has this contact (the code proved it)' },
          410: { description: 'code_expired' },
        },
      },
      async (ctx, body) => {
        const contact = await confirmContact(deps, requester(ctx), body);
        ctx.body = { status: 'verified', ...contact };
      },
    );
  };
}
