import { expiredRows, rowsToChange, type CleanupTask } from '../../jobs/cleanup-expired-records.js';
import { idleAccountFailures } from '../brute-force/account-failure-limit.js';
import { idleLadders } from '../brute-force/account-lockout.js';
import { idleIpThrottles } from '../brute-force/ip-throttle.js';
import { codesEndedBefore, lapsedCodes } from './verification-code-records.js';

/** Ended codes and idle counters are kept this long (for support and investigation), then deleted. */
export const securityRecordsRetentionMs = 24 * 60 * 60 * 1000;

const retentionCutoff = (now: Date) => new Date(now.getTime() - securityRecordsRetentionMs);

/**
 * The hourly cleanup (spec: Limits) of this area's records: lapsed codes become expired, codes ended a
 * day ago are deleted, and so are idle login counters (lockout ladders, account and IP windows).
 * Anyone adds rows here: a code for each identifier asked for, a ladder for each identifier and
 * address that failed a sign-in. Each goes a batch per transaction (cleanup-expired-records.ts): in one
 * statement, a flood's rows held the embedded database, which runs on the service's thread, and with
 * it every request of the process. Idempotent: every node may run it. (The audit log is kept:
 * retention is a policy decision.)
 */
export const securityRecordsCleanupTasks: CleanupTask[] = [
  rowsToChange('verification_codes lapsed', 'verification_codes', lapsedCodes, { status: 'expired' }),
  expiredRows('verification_codes', (query, now) => codesEndedBefore(query, retentionCutoff(now))),
  expiredRows('login_source_lockouts', (query, now) => idleLadders(query, retentionCutoff(now))),
  expiredRows('login_account_failures', idleAccountFailures),
  expiredRows('login_ip_throttle', idleIpThrottles),
];
