import type { Queryable } from '../../db/database.js';

/**
 * The hourly cleanup (spec: Limits; "expired sessions are removed by the hourly cleanup") of main-auth
 * sessions past their 30 days, with their refresh tokens (cascade). Revoked sessions stay until then:
 * their refresh tokens are what recognises a stolen token presented again.
 */
export async function cleanUpExpiredSessions(db: Queryable, now: Date) {
  return { sessionsDeleted: await db('sessions').where('expires_at', '<', now).delete() };
}
