import type { Context } from 'koa';
import { z } from 'zod';
import type { Clock } from '../clock.js';
import type { Database } from '../db/database.js';
import { notFound } from '../http/api-error.js';
import { principalOf, requirePermission } from '../http/bearer-auth.js';
import { loadUserAccess } from '../identity/access/user-access.js';
import { revokeUserSessions } from '../identity/sessions/sessions.js';
import {
  findUsers,
  lockedSources,
  setUserStatus,
  unlockUser,
} from '../identity/users/user-administration.js';
import { findUserById, type User } from '../identity/users/user.js';
import { adminAuditEventTypes, auditAdminChange } from './admin-audit.js';
import type { AdminRoutes } from './admin-api.js';
import { requireMayRestoreUser } from './user-authority.js';

export const manageUsersPermission = 'identity.users.manage';

const userSchema = z
  .object({
    id: z.string(),
    email: z.string().nullable(),
    email_verified: z.boolean(),
    phone: z.string().nullable(),
    phone_verified: z.boolean(),
    given_name: z.string().nullable(),
    family_name: z.string().nullable(),
    status: z.enum(['active', 'disabled']),
    created_at: z.string().describe('ISO 8601'),
  })
  .meta({ id: 'AdminUser' });

const userDetailSchema = userSchema
  .extend({ locked_sources: z.number().int().describe('Sources (IPs, devices) locked out right now') })
  .meta({ id: 'AdminUserDetail' });

function userView(user: User) {
  return {
    id: user.id,
    email: user.email,
    email_verified: user.emailVerified,
    phone: user.phone,
    phone_verified: user.phoneVerified,
    given_name: user.givenName,
    family_name: user.familyName,
    status: user.status,
    created_at: user.createdAt.toISOString(),
  };
}

const userParams = z.object({ userId: z.uuid().describe('The user’s id') });
const searchQuery = z.object({
  search: z
    .string()
    .trim()
    .min(1)
    .max(320)
    .optional()
    .describe('Part of the email, phone or name, or the id'),
  status: z.enum(['active', 'disabled']).optional(),
  limit: z.coerce.number().int().min(1).max(100).default(20),
  offset: z.coerce.number().int().min(0).max(1_000_000).default(0),
});

const errors = {
  400: { description: 'Bad input (the JSON error body names the fields)' },
  401: { description: 'No valid access token, or (sensitive changes) no recent authentication' },
  403: {
    description:
      'The token does not carry identity.users.manage, or (enable, unlock) the user holds permissions ' +
      'the token’s user does not',
  },
  404: { description: 'No such user' },
};

/**
 * Users for administrators: find, look at one (with its current lockouts), disable (sign-in refused,
 * sessions revoked, OAuth tokens inactive within seconds) and enable, unlock (lift the brute-force
 * lockouts), revoke every session. Every change is audited; disabling and revoking need a recent
 * authentication.
 */
export function userRoutes(deps: { db: Database; clock: Clock }): AdminRoutes {
  const { db, clock } = deps;
  const tags = ['Users'];
  const permission = requirePermission(manageUsersPermission);

  async function detail(userId: string) {
    const user = await findUserById(db, userId);
    if (!user) throw notFound('There is no such user.');
    return { ...userView(user), locked_sources: await lockedSources(db, userId, clock.now()) };
  }

  return (api) => {
    api.add(
      {
        method: 'get',
        path: '/users',
        summary: 'Find users, newest first',
        tags,
        security: 'bearer',
        query: searchQuery,
        responses: {
          200: {
            description: 'A page of users and how many match',
            schema: z.object({
              users: z.array(userSchema),
              total: z.number().int(),
              limit: z.number().int(),
              offset: z.number().int(),
            }),
          },
          ...errors,
        },
      },
      permission,
      async (ctx, _body, { query }) => {
        const found = await findUsers(db, query);
        ctx.set('Cache-Control', 'no-store');
        ctx.body = { users: found.users.map(userView), total: found.total, ...query };
      },
    );

    api.add(
      {
        method: 'get',
        path: '/users/:userId',
        summary: 'One user, with how many sources are locked out now',
        tags,
        security: 'bearer',
        params: userParams,
        responses: { 200: { description: 'The user', schema: userDetailSchema }, ...errors },
      },
      permission,
      async (ctx, _body, { params }) => {
        ctx.set('Cache-Control', 'no-store');
        ctx.body = await detail(params.userId);
      },
    );

    const action = (
      path: string,
      summary: string,
      reauthentication: boolean,
      apply: (
        trx: Database,
        userId: string,
        now: Date,
        ctx: Context,
      ) => Promise<Record<string, unknown> | undefined>,
    ) =>
      api.add(
        {
          method: 'post',
          path: `/users/:userId/${path}`,
          summary,
          tags,
          security: 'bearer',
          ...(reauthentication ? { reauthentication: true as const } : {}),
          params: userParams,
          responses: { 200: { description: 'The user now', schema: userDetailSchema }, ...errors },
        },
        permission,
        async (ctx, _body, { params }) => {
          await db.transaction(async (trx) => {
            const done = await apply(trx as unknown as Database, params.userId, clock.now(), ctx);
            if (!done) throw notFound('There is no such user.');
          });
          ctx.set('Cache-Control', 'no-store');
          ctx.body = await detail(params.userId);
        },
      );

    action(
      'disable',
      'Disable a user: sign-in refused, sessions revoked, OAuth tokens inactive within seconds',
      true,
      async (trx, userId, now, ctx) => {
        if (!(await setUserStatus(trx, userId, 'disabled', now))) return undefined;
        const revoked = await revokeUserSessions(trx, userId, { reason: 'user_disabled' }, now);
        await auditAdminChange(
          trx,
          ctx,
          adminAuditEventTypes.userDisabled,
          { targetUserId: userId, revoked },
          now,
        );
        return { revoked };
      },
    );
    action('enable', 'Enable a disabled user again', true, async (trx, userId, now, ctx) => {
      if (!(await findUserById(trx, userId))) return undefined;
      requireMayRestoreUser(principalOf(ctx), await loadUserAccess(trx, userId));
      if (!(await setUserStatus(trx, userId, 'active', now))) return undefined;
      await auditAdminChange(trx, ctx, adminAuditEventTypes.userEnabled, { targetUserId: userId }, now);
      return {};
    });
    action(
      'unlock',
      'Lift the user’s brute-force lockouts (every source, and the account-wide window)',
      false,
      async (trx, userId, now, ctx) => {
        if (!(await findUserById(trx, userId))) return undefined;
        requireMayRestoreUser(principalOf(ctx), await loadUserAccess(trx, userId));
        const lifted = await unlockUser(trx, userId, now);
        await auditAdminChange(
          trx,
          ctx,
          adminAuditEventTypes.userUnlocked,
          { targetUserId: userId, lifted },
          now,
        );
        return { lifted };
      },
    );
    action(
      'revoke-sessions',
      'Revoke every session of the user (signed out everywhere)',
      true,
      async (trx, userId, now, ctx) => {
        if (!(await findUserById(trx, userId))) return undefined;
        const revoked = await revokeUserSessions(trx, userId, { reason: 'revoked_by_admin' }, now);
        await auditAdminChange(
          trx,
          ctx,
          adminAuditEventTypes.userSessionsRevoked,
          { targetUserId: userId, revoked },
          now,
        );
        return { revoked };
      },
    );
  };
}
