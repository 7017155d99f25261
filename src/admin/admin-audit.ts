import type { Context } from 'koa';
import type { Queryable } from '../db/database.js';
import { principalOf } from '../http/bearer-auth.js';
import { requestInfo } from '../http/request-info.js';
import { writeAuditEvent } from '../identity/audit/audit-log.js';

/** The audit event types of administrative changes (table audit_log). */
export const adminAuditEventTypes = {
  clientCreated: 'admin.oauth_client.created',
  clientUpdated: 'admin.oauth_client.updated',
  clientDisabled: 'admin.oauth_client.disabled',
  clientEnabled: 'admin.oauth_client.enabled',
  clientDeleted: 'admin.oauth_client.deleted',
  clientSecretRotated: 'admin.oauth_client.secret_rotated',
  funnelReplaced: 'admin.auth_flow.funnel_replaced',
  allowedMethodsChanged: 'admin.auth_flow.allowed_methods_changed',
  userDisabled: 'admin.user.disabled',
  userEnabled: 'admin.user.enabled',
  userUnlocked: 'admin.user.unlocked',
  userSessionsRevoked: 'admin.user.sessions_revoked',
} as const;

/**
 * Writes the audit event of an administrative change made through the API: who (the administrator's
 * user id, `details.actor`), from where, and what. Pass the change's transaction: both are written or
 * neither.
 */
export async function auditAdminChange(
  trx: Queryable,
  ctx: Context,
  type: string,
  details: Record<string, unknown>,
  now: Date,
): Promise<void> {
  const principal = principalOf(ctx);
  const { ip, userAgent } = requestInfo(ctx);
  await writeAuditEvent(
    trx,
    {
      type,
      ...(principal.kind === 'user' ? { userId: principal.userId } : {}),
      ip,
      userAgent,
      details: { via: 'api', ...details },
    },
    now,
  );
}

/** The audit event of an administrative change made with the CLI (`npm run idp`): no user, `via: cli`. */
export async function auditCliChange(
  trx: Queryable,
  type: string,
  details: Record<string, unknown>,
  now: Date,
): Promise<void> {
  await writeAuditEvent(trx, { type, details: { via: 'cli', ...details } }, now);
}
