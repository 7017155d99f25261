import type { Queryable } from '../../db/database.js';
import { deleteIdleLoginCounters } from '../brute-force/login-protection.js';
import { deleteEndedCodes, expireOutdatedCodes } from './verification-code-records.js';

/** Ended codes and idle counters are kept this long (for support and investigation), then deleted. */
export const securityRecordsRetentionMs = 24 * 60 * 60 * 1000;

/**
 * The hourly cleanup (spec: Limits) of this area's records: lapsed codes become expired, codes ended a
 * day ago are deleted, and so are idle login counters (lockout ladders, account and IP windows).
 * Idempotent: every node may run it. (The audit log is kept: retention is a policy decision.)
 */
export async function cleanUpSecurityRecords(db: Queryable, now: Date) {
  const cutoff = new Date(now.getTime() - securityRecordsRetentionMs);
  return {
    codesExpired: await expireOutdatedCodes(db, now),
    codesDeleted: await deleteEndedCodes(db, cutoff),
    ...(await deleteIdleLoginCounters(db, now, cutoff)),
  };
}
