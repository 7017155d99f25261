import { z } from 'zod';
import { adminAuditEventTypes, auditCliChange } from '../../admin/admin-audit.js';
import { revokeUserSessions } from '../../identity/sessions/sessions.js';
import {
  findUsers,
  lockedSources,
  setUserStatus,
  unlockUser,
} from '../../identity/users/user-administration.js';
import { findUserById } from '../../identity/users/user.js';
import { UsageError, type CliCommand, type CommandContext, type OptionValues } from '../command.js';
import { describeZodError } from '../describe-zod-error.js';

function userIdOf(values: OptionValues): string {
  const parsed = z.uuid().safeParse(values['user-id']);
  if (!parsed.success) throw new UsageError('--user-id must be a user id (a UUID)');
  return parsed.data;
}

const findSchema = z.object({
  search: z.string().trim().min(1).max(320).optional(),
  status: z.enum(['active', 'disabled']).optional(),
  limit: z.coerce.number().int().min(1).max(1000).default(50),
  offset: z.coerce.number().int().min(0).default(0),
});

export const usersFindCommand: CliCommand = {
  name: 'users:find',
  usage: 'users:find [--search S] [--status active|disabled] [--limit N] [--offset N]',
  summary: 'Find users by part of their email, phone or name (or their id), newest first',
  options: {
    search: { type: 'string' },
    status: { type: 'string' },
    limit: { type: 'string' },
    offset: { type: 'string' },
  },
  needsDatabase: true,
  parse(values) {
    const parsed = findSchema.safeParse(values);
    if (!parsed.success) throw new UsageError(describeZodError(parsed.error));
    return parsed.data;
  },
  async run(query: z.infer<typeof findSchema>, context) {
    const { users, total } = await findUsers(context!.db, query);
    return {
      total,
      users: users.map((user) => ({
        id: user.id,
        email: user.email,
        phone: user.phone,
        given_name: user.givenName,
        family_name: user.familyName,
        status: user.status,
        created_at: user.createdAt.toISOString(),
      })),
    };
  },
};

/** A command on one user: the change and its audit event in one transaction. */
function userCommand(
  name: string,
  summary: string,
  apply: (trx: CommandContext['db'], userId: string, now: Date) => Promise<Record<string, unknown>>,
): CliCommand {
  return {
    name,
    usage: `${name} --user-id U`,
    summary,
    options: { 'user-id': { type: 'string' } },
    needsDatabase: true,
    parse: userIdOf,
    async run(userId: string, context) {
      const { db, clock } = context!;
      const outcome = await db.transaction(async (trx) => {
        const now = clock.now();
        if (!(await findUserById(trx, userId))) throw new UsageError(`no user with id ${userId}`);
        return apply(trx as unknown as CommandContext['db'], userId, now);
      });
      const user = (await findUserById(db, userId))!;
      return {
        id: userId,
        status: user.status,
        locked_sources: await lockedSources(db, userId, clock.now()),
        ...outcome,
      };
    },
  };
}

export const usersDisableCommand = userCommand(
  'users:disable',
  'Disable a user: sign-in refused, every session revoked',
  async (trx, userId, now) => {
    await setUserStatus(trx, userId, 'disabled', now);
    const revoked = await revokeUserSessions(trx, userId, { reason: 'user_disabled' }, now);
    await auditCliChange(trx, adminAuditEventTypes.userDisabled, { targetUserId: userId, revoked }, now);
    return { revoked_sessions: revoked };
  },
);

export const usersEnableCommand = userCommand(
  'users:enable',
  'Enable a disabled user again',
  async (trx, userId, now) => {
    await setUserStatus(trx, userId, 'active', now);
    await auditCliChange(trx, adminAuditEventTypes.userEnabled, { targetUserId: userId }, now);
    return {};
  },
);

export const usersUnlockCommand = userCommand(
  'users:unlock',
  'Lift a user’s brute-force lockouts (every source, and the account-wide window)',
  async (trx, userId, now) => {
    const lifted = await unlockUser(trx, userId, now);
    await auditCliChange(trx, adminAuditEventTypes.userUnlocked, { targetUserId: userId, lifted }, now);
    return { lifted };
  },
);

export const usersRevokeSessionsCommand = userCommand(
  'users:revoke-sessions',
  'Revoke every session of a user (signed out everywhere)',
  async (trx, userId, now) => {
    const revoked = await revokeUserSessions(trx, userId, { reason: 'revoked_by_admin' }, now);
    await auditCliChange(
      trx,
      adminAuditEventTypes.userSessionsRevoked,
      { targetUserId: userId, revoked },
      now,
    );
    return { revoked_sessions: revoked };
  },
);
