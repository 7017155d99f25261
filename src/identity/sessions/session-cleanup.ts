import { expiredRows, type CleanupTask } from '../../jobs/cleanup-expired-records.js';

/**
 * The hourly cleanup (spec: Limits; "expired sessions are removed by the hourly cleanup") of main-auth
 * sessions past their 30 days, with their refresh tokens. Revoked sessions stay until then: their
 * refresh tokens are what recognises a stolen token presented again. A session keeps every token it
 * rotated through, one per refresh (30 a minute from each address), so the tokens go first, a batch at
 * a time (each expires with its session): deleted by the sessions' cascade, a batch of sessions could
 * take millions of rows in one statement, holding the embedded database, and with it every request of
 * the process, until done.
 */
export const sessionCleanupTasks: CleanupTask[] = [
  expiredRows('refresh_tokens', (query, now) => query.where('expires_at', '<', now)),
  expiredRows('sessions', (query, now) => query.where('expires_at', '<', now)),
];
