import { z } from 'zod';
import type { Clock } from '../../clock.js';
import { requestInfo } from '../../http/request-info.js';
import {
  reauthenticate,
  type ReauthenticationDeps,
  type ReauthenticationOutcome,
} from '../reauthentication/reauthenticate.js';
import { reauthenticationPath } from '../reauthentication/session-authentications.js';
import { activeSessionOf } from '../sessions/require-active-session.js';
import type { IdentityRoutes } from './identity-api.js';

const code = z.string().trim().min(1).max(20).describe('The code from the app or the message');

const reauthenticationRequest = z
  .discriminatedUnion('method', [
    z.object({ method: z.literal('password'), password: z.string().min(1).max(1024) }),
    z.object({ method: z.literal('totp'), code }),
    z.object({
      method: z.enum(['email_otp', 'sms_otp']),
      code: code.optional().describe('Absent: a code is sent to the verified email or phone'),
      transport: z.string().max(50).optional().describe('Transport chosen when several can deliver'),
    }),
  ])
  .meta({ id: 'ReauthenticationRequest' });

const reauthenticationResponse = z
  .union([
    z.object({
      status: z.literal('reauthenticated'),
      method: z.string(),
      validUntil: z.iso.datetime().describe('Sensitive changes are allowed until then'),
    }),
    z.object({
      status: z.literal('code_sent'),
      method: z.string(),
      expiresInSeconds: z.number().int(),
      resendAfterSeconds: z.number().int(),
    }),
  ])
  .meta({ id: 'ReauthenticationResponse' });

/**
 * POST /auth/reauthenticate: the signed-in user confirms it's them (password, TOTP, or a code sent to a
 * verified contact) before a sensitive change; the session records it.
 */
export function reauthenticationRoutes(deps: ReauthenticationDeps & { clock: Clock }): IdentityRoutes {
  const present = (outcome: ReauthenticationOutcome): z.infer<typeof reauthenticationResponse> =>
    outcome.status === 'reauthenticated'
      ? { status: outcome.status, method: outcome.method, validUntil: outcome.validUntil.toISOString() }
      : {
          status: outcome.status,
          method: outcome.method,
          expiresInSeconds: Math.round((outcome.expiresAt.getTime() - deps.clock.now().getTime()) / 1000),
          resendAfterSeconds: outcome.resendAfterSeconds,
        };
  return (api) => {
    api.add(
      {
        method: 'post',
        path: reauthenticationPath,
        summary:
          'Confirm it’s you (password, authenticator or emailed/texted code) before a sensitive change',
        tags: ['Session'],
        security: 'bearer',
        body: reauthenticationRequest,
        responses: {
          200: { description: 'Re-authenticated, or a code was sent', schema: reauthenticationResponse },
          400: { description: 'invalid_password / invalid_code (details.attemptsLeft for sent codes)' },
          401: { description: 'No valid main-auth access token, or its session has ended' },
          409: { description: 'method_not_available: details.methods lists the ones the user has' },
          410: { description: 'code_expired: ask for a new code' },
          429: { description: 'Locked out like a login, or a code-sending limit (Retry-After)' },
        },
      },
      async (ctx, body) => {
        const outcome = await reauthenticate(deps, {
          session: activeSessionOf(ctx),
          request: requestInfo(ctx),
          proof: body,
        });
        ctx.set('Cache-Control', 'no-store');
        ctx.body = present(outcome);
      },
    );
  };
}
