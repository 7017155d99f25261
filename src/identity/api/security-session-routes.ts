import { z } from 'zod';
import type { Clock } from '../../clock.js';
import type { Database } from '../../db/database.js';
import { notFound } from '../../http/api-error.js';
import { requestInfo } from '../../http/request-info.js';
import { activeSessionOf } from '../sessions/require-active-session.js';
import { listAppSignInsOf, listedAppSignInsAtMost } from '../../oidc/models/app-sign-ins.js';
import {
  endAppSignInOfUser,
  revokeOtherSessionsOfUser,
  revokeSessionOfUser,
} from '../sessions/session-revocation.js';
import type { SessionPolicy } from '../sessions/session-policy.js';
import { listActiveSessions, listedSessionsAtMost } from '../sessions/sessions.js';
import type { IdentityRoutes } from './identity-api.js';

export interface SecuritySessionRouteDependencies {
  db: Database;
  clock: Clock;
  sessionPolicy: SessionPolicy;
}

const sessionView = z
  .object({
    id: z.uuid(),
    current: z.boolean().describe('The session of the access token making this request'),
    browserName: z.string(),
    userAgent: z.string(),
    ipAddress: z.string(),
    authMethod: z.string(),
    createdAt: z.iso.datetime(),
    lastActivityAt: z.iso.datetime(),
    expiresAt: z.iso.datetime(),
  })
  .meta({ id: 'Session' });

const sessionList = z.object({ sessions: z.array(sessionView) }).meta({ id: 'SessionList' });

const appSignInView = z
  .object({
    id: z.string().describe("The engine's session in that browser"),
    signedInAt: z.iso.datetime(),
    applications: z
      .array(z.object({ clientId: z.string(), name: z.string() }))
      .describe('The applications signed in to in that browser'),
  })
  .meta({ id: 'AppSignIn' });

const appSignInList = z.object({ items: z.array(appSignInView) }).meta({ id: 'AppSignInList' });

/**
 * GET /security/sessions, DELETE /security/sessions/:id, POST /security/sessions/revoke-all; and the
 * sign-ins through the OIDC pages (the engine's sessions, one per browser), which are no main-auth
 * sessions: GET /security/app-sign-ins, DELETE /security/app-sign-ins/:id.
 */
export function securitySessionRoutes(deps: SecuritySessionRouteDependencies): IdentityRoutes {
  const { db, clock } = deps;
  const unauthorized = { 401: { description: 'No valid main-auth access token, or its session has ended' } };

  return (api) => {
    api.add(
      {
        method: 'get',
        path: '/security/sessions',
        summary: 'The active sessions of the signed-in user',
        tags: ['Security'],
        security: 'bearer',
        responses: {
          200: {
            description: `Active sessions, most recently active first: at most ${listedSessionsAtMost}, the current one among them`,
            schema: sessionList,
          },
          ...unauthorized,
        },
      },
      async (ctx) => {
        const current = activeSessionOf(ctx);
        const sessions = await listActiveSessions(
          db,
          current.userId,
          deps.sessionPolicy,
          clock.now(),
          current.id,
        );
        ctx.set('Cache-Control', 'no-store');
        ctx.body = {
          sessions: sessions.map((session) => ({
            id: session.id,
            current: session.id === current.id,
            browserName: session.browserName,
            userAgent: session.userAgent,
            ipAddress: session.ipAddress,
            authMethod: session.authMethod,
            createdAt: session.createdAt.toISOString(),
            lastActivityAt: session.lastActivityAt.toISOString(),
            expiresAt: session.expiresAt.toISOString(),
          })),
        } satisfies z.infer<typeof sessionList>;
      },
    );

    api.add(
      {
        method: 'delete',
        path: '/security/sessions/:id',
        summary: 'Revoke one session (its refresh token stops working)',
        tags: ['Security'],
        security: 'bearer',
        responses: {
          200: { description: 'Revoked', schema: z.object({ revoked: z.literal(true) }) },
          ...unauthorized,
          404: { description: 'No such active session of this user' },
        },
      },
      async (ctx) => {
        const current = activeSessionOf(ctx);
        const now = clock.now();
        const sessionId = String(ctx.params.id);
        const revoked = await revokeSessionOfUser(
          db,
          { userId: current.userId, sessionId, request: requestInfo(ctx) },
          now,
        );
        if (!revoked) throw notFound('There is no such active session.');
        ctx.body = { revoked: true };
      },
    );

    api.add(
      {
        method: 'post',
        path: '/security/sessions/revoke-all',
        summary: 'Revoke every session except the current one',
        tags: ['Security'],
        security: 'bearer',
        responses: {
          200: { description: 'How many were revoked', schema: z.object({ revokedCount: z.number().int() }) },
          ...unauthorized,
        },
      },
      async (ctx) => {
        const current = activeSessionOf(ctx);
        const now = clock.now();
        const revokedCount = await revokeOtherSessionsOfUser(
          db,
          { userId: current.userId, currentSessionId: current.id, request: requestInfo(ctx) },
          now,
        );
        ctx.body = { revokedCount };
      },
    );

    api.add(
      {
        method: 'get',
        path: '/security/app-sign-ins',
        summary: "The signed-in user's live sign-ins to applications through the OIDC pages, one per browser",
        tags: ['Security'],
        security: 'bearer',
        responses: {
          200: {
            description: `Live sign-ins, latest first: at most ${listedAppSignInsAtMost}`,
            schema: appSignInList,
          },
          ...unauthorized,
        },
      },
      async (ctx) => {
        const current = activeSessionOf(ctx);
        const signIns = await listAppSignInsOf(db, current.userId, clock.now());
        ctx.set('Cache-Control', 'no-store');
        ctx.body = {
          items: signIns.map((signIn) => ({
            id: signIn.id,
            signedInAt: signIn.signedInAt.toISOString(),
            applications: signIn.applications,
          })),
        } satisfies z.infer<typeof appSignInList>;
      },
    );

    api.add(
      {
        method: 'delete',
        path: '/security/app-sign-ins/:id',
        summary: "End one sign-in to applications (that browser's, and the grants issued in it)",
        tags: ['Security'],
        security: 'bearer',
        responses: {
          200: { description: 'Ended', schema: z.object({ ended: z.literal(true) }) },
          ...unauthorized,
          404: { description: 'No such live sign-in of this user' },
        },
      },
      async (ctx) => {
        const current = activeSessionOf(ctx);
        const ended = await endAppSignInOfUser(
          db,
          { userId: current.userId, appSignInId: String(ctx.params.id), request: requestInfo(ctx) },
          clock.now(),
        );
        if (!ended) throw notFound('There is no such live sign-in.');
        ctx.body = { ended: true };
      },
    );
  };
}
