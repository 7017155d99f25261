import type { Clock } from '../../clock.js';
import type { Queryable } from '../../db/database.js';
import { ApiError } from '../../http/api-error.js';
import { auditEventTypes, writeAuditEvent } from '../audit/audit-log.js';
import {
  claimAccountAttempt,
  lockoutSubject,
  resetAccountFailures,
  takeUnreportedLock,
} from './account-lockout.js';
import { claimIpAttempt, releaseIpAttempt, takeUnreportedIpLock } from './ip-throttle.js';

export interface LoginProtectionDeps {
  db: Queryable;
  clock: Clock;
}

/** "30 seconds", "5 minutes": how long to wait, for a person. */
export function describeWait(seconds: number): string {
  if (seconds < 90) return `${seconds} ${seconds === 1 ? 'second' : 'seconds'}`;
  const minutes = Math.ceil(seconds / 60);
  return `${minutes} minutes`;
}

/**
 * The 429 of a locked account or throttled IP. The same for both, and for a right or a wrong password:
 * it is decided before the password is looked at.
 */
export function loginLocked(lockedUntil: Date, now: Date): ApiError {
  const retryAfterSeconds = Math.max(1, Math.ceil((lockedUntil.getTime() - now.getTime()) / 1000));
  return new ApiError(
    429,
    'too_many_attempts',
    `Too many failed sign-in attempts. Try again in ${describeWait(retryAfterSeconds)}.`,
    { retryAfterSeconds, lockedUntil: lockedUntil.toISOString() },
    { 'Retry-After': String(retryAfterSeconds) },
  );
}

/**
 * Call BEFORE checking a password or code. Throws 429 (Retry-After) while the IP or the account must
 * wait; otherwise claims the attempt (counted as a failure until recordLoginSuccess takes it back), so
 * parallel attempts can't get more tries than the ladder allows. `identifier` (optional) keys the ladder
 * when no account has it, so unknown identifiers lock exactly like real accounts (no enumeration).
 */
export async function assertLoginAllowed(
  deps: LoginProtectionDeps,
  attempt: { userId: string | undefined; ip: string; identifier?: string | undefined },
): Promise<void> {
  const now = deps.clock.now();
  const ip = await claimIpAttempt(deps.db, attempt.ip, now);
  if (!ip.allowed) throw loginLocked(ip.lockedUntil, now);
  const subject = lockoutSubject(attempt);
  if (!subject) return;
  const account = await claimAccountAttempt(deps.db, subject, now);
  if (!account.allowed) throw loginLocked(account.lockedUntil, now);
}

/**
 * A failed password or code: the audit event identity.login.failed (IP, user agent, identifier), and
 * identity.account.locked / identity.ip.throttled once when this failure's claim set a lock.
 */
export async function recordLoginFailure(
  deps: LoginProtectionDeps,
  failure: {
    userId: string | undefined;
    identifier: string;
    ip: string;
    userAgent: string;
    /** The step or factor that failed: password, otp, ... */
    method?: string;
    reason?: string;
  },
): Promise<void> {
  const now = deps.clock.now();
  const who = { userId: failure.userId, ip: failure.ip, userAgent: failure.userAgent };
  await writeAuditEvent(
    deps.db,
    {
      type: auditEventTypes.loginFailed,
      ...who,
      details: {
        identifier: failure.identifier,
        ...(failure.method ? { method: failure.method } : {}),
        ...(failure.reason ? { reason: failure.reason } : {}),
      },
    },
    now,
  );
  const subject = lockoutSubject(failure);
  const lock = subject ? await takeUnreportedLock(deps.db, subject, now) : undefined;
  if (lock) {
    await writeAuditEvent(
      deps.db,
      {
        type: auditEventTypes.accountLocked,
        ...who,
        details: {
          identifier: failure.identifier,
          consecutiveFailures: lock.failures,
          lockedUntil: lock.lockedUntil.toISOString(),
        },
      },
      now,
    );
  }
  const ipLock = await takeUnreportedIpLock(deps.db, failure.ip, now);
  if (ipLock) {
    await writeAuditEvent(
      deps.db,
      {
        type: auditEventTypes.ipThrottled,
        ...who,
        details: { failures: ipLock.failures, lockedUntil: ipLock.lockedUntil.toISOString() },
      },
      now,
    );
  }
}

/**
 * A successful password or code: the account's count starts again, the IP gets its claimed failure
 * back, and identity.login.succeeded is written with the method.
 */
export async function recordLoginSuccess(
  deps: LoginProtectionDeps,
  success: { userId: string; ip: string; userAgent: string; method: string },
): Promise<void> {
  const now = deps.clock.now();
  await releaseLoginAttempt(deps, success);
  await writeAuditEvent(
    deps.db,
    {
      type: auditEventTypes.loginSucceeded,
      userId: success.userId,
      ip: success.ip,
      userAgent: success.userAgent,
      details: { method: success.method },
    },
    now,
  );
}

/**
 * A password proven outside a login (e.g. the current password of a password change): the same reset
 * of the counters as a successful login, without the login audit event.
 */
export async function releaseLoginAttempt(
  deps: LoginProtectionDeps,
  attempt: { userId: string; ip: string },
): Promise<void> {
  await resetAccountFailures(deps.db, lockoutSubject({ userId: attempt.userId })!);
  await releaseIpAttempt(deps.db, attempt.ip, deps.clock.now());
}

/** Clears an account's lockout (its owner proved control of a contact, e.g. by a password reset). */
export async function clearAccountLockout(db: Queryable, userId: string): Promise<void> {
  await resetAccountFailures(db, lockoutSubject({ userId })!);
}
