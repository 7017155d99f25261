import type { Knex } from 'knex';
import type { Queryable } from '../../db/database.js';
import { currentRequest } from '../../http/request-context.js';

/**
 * The security audit log (table audit_log). Every module that sees a security event writes it here;
 * the type names below are the ones the service writes (others may add their own, same pattern).
 */
export const auditEventTypes = {
  loginFailed: 'identity.login.failed',
  loginSucceeded: 'identity.login.succeeded',
  refreshTokenReuseDetected: 'identity.refresh_token.reuse_detected',
  accountLocked: 'identity.account.locked',
  ipThrottled: 'identity.ip.throttled',
  passwordChanged: 'identity.password.changed',
  passwordReset: 'identity.password.reset',
  sessionRevoked: 'identity.session.revoked',
  authMethodAdded: 'identity.auth_method.added',
  authMethodRemoved: 'identity.auth_method.removed',
  contactVerified: 'identity.contact.verified',
  reauthenticated: 'identity.session.reauthenticated',
} as const;

export interface AuditEvent {
  /** e.g. `identity.login.failed` (see auditEventTypes). */
  type: string;
  userId?: string | undefined;
  ip?: string | undefined;
  userAgent?: string | undefined;
  /** Event-specific facts (identifier, method, reason...). Never a secret. */
  details?: Record<string, unknown>;
}

export interface AuditRecord {
  id: number;
  type: string;
  userId: string | null;
  ip: string | null;
  userAgent: string | null;
  details: Record<string, unknown>;
  createdAt: Date;
}

interface AuditRow {
  id: number;
  type: string;
  user_id: string | null;
  ip: string | null;
  user_agent: string | null;
  details: Record<string, unknown>;
  created_at: Date;
}

/**
 * Appends one event. Pass the open transaction when the event belongs to a change (a password reset),
 * so the event and the change are written together or not at all. `alongside` adds changes (CTEs) to
 * the insert, so they and the event are one statement: one round trip instead of two.
 */
export async function writeAuditEvent(
  db: Queryable,
  event: AuditEvent,
  now: Date,
  alongside?: (insert: Knex.QueryBuilder) => Knex.QueryBuilder,
): Promise<void> {
  const insert = db('audit_log');
  await (alongside ? alongside(insert) : insert).insert({
    type: event.type,
    user_id: event.userId ?? null,
    ip: event.ip?.slice(0, 64) ?? null,
    user_agent: event.userAgent?.slice(0, 512) ?? null,
    details: JSON.stringify(event.details ?? {}),
    created_at: now,
  });
  // Counted in the service's metrics (logins, lockouts) when written while serving a request.
  currentRequest()?.observers.auditEvent?.(event.type);
}

export interface AuditQuery {
  userId?: string;
  type?: string;
  limit?: number;
}

/** The latest events first (in the order they were written). */
export async function listAuditEvents(db: Queryable, query: AuditQuery = {}): Promise<AuditRecord[]> {
  const builder = db<AuditRow>('audit_log')
    .orderBy('id', 'desc')
    .limit(query.limit ?? 100);
  if (query.userId) builder.where({ user_id: query.userId });
  if (query.type) builder.where({ type: query.type });
  const rows = await builder;
  return rows.map((row) => ({
    id: row.id,
    type: row.type,
    userId: row.user_id,
    ip: row.ip,
    userAgent: row.user_agent,
    details: row.details,
    createdAt: row.created_at,
  }));
}
