import type { Clock } from '../../clock.js';
import type { Queryable } from '../../db/database.js';
import { ApiError } from '../../http/api-error.js';
import { sleepWaiting } from '../../http/waiting-requests.js';
import { auditEventTypes, writeAuditEvent } from '../audit/audit-log.js';
import {
  accountClaim,
  accountRelease,
  clearAccountFailures,
  recordAccountFailure,
} from './account-failure-limit.js';
import {
  clearAccountLadders,
  ladderClaim,
  ladderSuccess,
  lockoutSubject,
  recordLadderFailure,
  type LadderKey,
} from './account-lockout.js';
import type { CounterClaim, CounterRelease } from './attempt-claims.js';
import { claimTogether, releaseTogether, withReleases, type ReadAlongside } from './claim-together.js';
import { ipClaim, ipRelease, recordIpFailure } from './ip-throttle.js';
import { loginSourceOf, type LoginSource } from './login-source.js';

export interface LoginProtectionDeps {
  db: Queryable;
  clock: Clock;
}

/** What is known of a login attempt before its password or code is checked. */
export interface LoginAttempt {
  userId: string | undefined;
  /** The client's full address, for the audit log. */
  ip: string;
  /** What the counters key on: the address's block (RequestInfo.addressBlock, an IPv6 client's /64). */
  addressBlock: string;
  /** Keys the ladder when no account has it, so unknown identifiers lock exactly like real accounts. */
  identifier?: string | undefined;
  /** The device-binding cookie the request presented: a device the account signed in on before. */
  deviceCookie?: string | undefined;
  /** The main-auth session the attempt is made in (a password re-checked by a signed-in user). */
  sessionId?: string | undefined;
  /** Authentication methods this sign-in already proved (amr values, e.g. `otp`). */
  provenFactors?: readonly string[] | undefined;
  /** The factor being checked: `password` (the default), `totp`, `otp` (a code sent out of band)... */
  method?: string | undefined;
}

/**
 * The counters that judge an attempt, as assertLoginAllowed claimed them. Hand it back to
 * recordLoginFailure / recordLoginSuccess / releaseLoginAttempt so they give back the same claims.
 */
export interface LoginClaim {
  /** The lockout ladder of this account from this source (absent with neither account nor identifier). */
  ladder: LadderKey | undefined;
  source: LoginSource['kind'];
  /** The account key when the account-wide bound applies (an unknown source with no other factor). */
  accountWide: string | undefined;
  /**
   * The address block when the IP throttle applies (every source but the account's own device or
   * session).
   */
  addressBlock: string | undefined;
}

/**
 * How long an attempt waits for a place while other attempts of the same ladder are being checked
 * (an argon2 verification takes ~65 ms): in-flight ones that succeed reset the count and let it
 * through, failed ones lock it. Past the wait: 429 for a second.
 */
export const claimWait = { maxMilliseconds: 10_000, firstPollMilliseconds: 20, maxPollMilliseconds: 200 };

/** "30 seconds", "5 minutes": how long to wait, for a person. */
export function describeWait(seconds: number): string {
  if (seconds < 90) return `${seconds} ${seconds === 1 ? 'second' : 'seconds'}`;
  const minutes = Math.ceil(seconds / 60);
  return `${minutes} minutes`;
}

/**
 * The 429 of a locked source, account or throttled IP. The same for all, and for a right or a wrong
 * password: it is decided before the password is looked at.
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
 * Which counters judge an attempt. The ladder: this account from this source (login-source.ts). The
 * account-wide bound: only for attempts from an IP that proved no other factor in this sign-in, and
 * not for a code sent out of band (bounded by the code's own limits: 5 tries a code, 3 codes in 10
 * minutes). The IP throttle: every attempt but those from the account's own device or session.
 */
async function claimFor(deps: LoginProtectionDeps, attempt: LoginAttempt): Promise<LoginClaim> {
  const account = lockoutSubject(attempt);
  const source = await loginSourceOf(deps.db, attempt);
  const ownSource = source.kind !== 'ip';
  const otherFactor = (attempt.provenFactors ?? []).some((factor) => factor !== 'pwd');
  const vouched = ownSource || otherFactor || attempt.method === 'otp';
  return {
    ladder: account ? { account, source: ladderSourceOf(source, attempt.method) } : undefined,
    source: source.kind,
    accountWide: account && !vouched ? account : undefined,
    addressBlock: ownSource ? undefined : attempt.addressBlock,
  };
}

/**
 * The ladder a factor is counted on: the source's own for the password (the `method` default), one
 * per factor besides (`ip:…|totp`, `device:…|otp`). A success resets its ladder, and a password
 * that an attacker knows must not forgive their wrong authenticator codes: on one shared ladder, the
 * right password typed before every fourth wrong code kept it at zero, and the second factor of that
 * source was never locked (test/security/second-factor-guesses-between-passwords.test.ts). The
 * account-wide bound and the IP throttle, where they apply (claimFor), count every factor as before.
 */
function ladderSourceOf(source: LoginSource, method: string | undefined): string {
  return method === undefined || method === 'password' ? source.key : `${source.key}|${method}`;
}

/**
 * The counters of `claim`, in the order every claim and release locks their rows (claim-together.ts):
 * the ladder, the account-wide bound, the IP.
 */
function counterClaims(claim: LoginClaim, now: Date): CounterClaim[] {
  const { ladder, accountWide, addressBlock } = claim;
  return [
    ...(ladder ? [ladderClaim(ladder, now)] : []),
    ...(accountWide ? [accountClaim(accountWide, now)] : []),
    ...(addressBlock ? [ipClaim(addressBlock, now)] : []),
  ];
}

/**
 * What a success gives back, in the claims' order: the ladder's claim with its count reset, the
 * account-wide and IP claims.
 */
function releasesOf(claim: LoginClaim): CounterRelease[] {
  return [
    ...(claim.ladder ? [ladderSuccess(claim.ladder)] : []),
    ...(claim.accountWide ? [accountRelease(claim.accountWide)] : []),
    ...(claim.addressBlock ? [ipRelease(claim.addressBlock)] : []),
  ];
}

/**
 * Call BEFORE checking a password or code. Throws 429 (Retry-After) while this source of the account,
 * the account (for unknown sources) or the IP must wait; otherwise claims a place for the attempt on
 * each counter and answers the claim, to hand to recordLoginFailure / recordLoginSuccess. When the
 * places are taken by attempts of the same ladder still being checked, it waits for their outcome
 * (at most claimWait.maxMilliseconds).
 */
export async function assertLoginAllowed(
  deps: LoginProtectionDeps,
  attempt: LoginAttempt,
): Promise<LoginClaim> {
  return (await claimLoginAttempt(deps, attempt)).claim;
}

/**
 * assertLoginAllowed, and with the granted claim the value of `alongside` (e.g. the password hash the
 * attempt checks next), read in the claim's statement.
 */
export async function claimLoginAttempt(
  deps: LoginProtectionDeps,
  attempt: LoginAttempt,
  alongside?: ReadAlongside,
): Promise<{ claim: LoginClaim; read: unknown }> {
  const claim = await claimFor(deps, attempt);
  // How long this request waits is real elapsed time, not a rule of the service's clock.
  const deadline = Date.now() + claimWait.maxMilliseconds;
  for (
    let poll = claimWait.firstPollMilliseconds;
    ;
    poll = Math.min(poll * 2, claimWait.maxPollMilliseconds)
  ) {
    const now = deps.clock.now();
    const outcome = await claimTogether(deps.db, counterClaims(claim, now), now, alongside);
    const { refusal } = outcome;
    if (!refusal) return { claim, read: 'read' in outcome ? outcome.read : undefined };
    if ('lockedUntil' in refusal) throw loginLocked(refusal.lockedUntil, now);
    if (Date.now() + poll > deadline) throw loginLocked(new Date(now.getTime() + 1000), now);
    // Jitter, so waiting attempts don't all come back at the same moment. While asleep, the attempt
    // has claimed nothing: it may give its place to a newcomer at the bound (waiting-requests.ts).
    await sleepWaiting(poll / 2 + Math.random() * poll);
  }
}

/**
 * A failed password or code: the audit event identity.login.failed (IP, user agent, identifier), the
 * failure counted on the attempt's counters, and identity.account.locked / identity.ip.throttled when
 * this failure set a lock.
 */
export async function recordLoginFailure(
  deps: LoginProtectionDeps,
  failure: LoginAttempt & {
    identifier: string;
    userAgent: string;
    reason?: string;
    /** What assertLoginAllowed answered; without it the counters are worked out again. */
    claim?: LoginClaim | undefined;
  },
): Promise<void> {
  const claim = failure.claim ?? (await claimFor(deps, failure));
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
  if (claim.ladder) {
    const lock = await recordLadderFailure(deps.db, claim.ladder, now);
    if (lock.lockedUntil) {
      const details = {
        identifier: failure.identifier,
        scope: 'source',
        source: claim.source,
        consecutiveFailures: lock.failures,
        lockedUntil: lock.lockedUntil.toISOString(),
      };
      await writeAuditEvent(deps.db, { type: auditEventTypes.accountLocked, ...who, details }, now);
    }
  }
  if (claim.accountWide) {
    const lock = await recordAccountFailure(deps.db, claim.accountWide, now);
    if (lock.lockedUntil) {
      const details = {
        identifier: failure.identifier,
        scope: 'unknown_sources',
        failures: lock.failures,
        lockedUntil: lock.lockedUntil.toISOString(),
      };
      await writeAuditEvent(deps.db, { type: auditEventTypes.accountLocked, ...who, details }, now);
    }
  }
  if (claim.addressBlock) {
    const lock = await recordIpFailure(deps.db, claim.addressBlock, now);
    if (lock.lockedUntil) {
      const details = { failures: lock.failures, lockedUntil: lock.lockedUntil.toISOString() };
      await writeAuditEvent(deps.db, { type: auditEventTypes.ipThrottled, ...who, details }, now);
    }
  }
}

/**
 * A successful password or code: the claims given back, this source's count starts again, and
 * identity.login.succeeded is written with the method.
 */
export async function recordLoginSuccess(
  deps: LoginProtectionDeps,
  success: LoginAttempt & { userId: string; userAgent: string; method: string; claim?: LoginClaim },
): Promise<void> {
  const claim = success.claim ?? (await claimFor(deps, success));
  const now = deps.clock.now();
  // The claims given back and the event written in one statement (claim-together.ts).
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
    withReleases(deps.db, releasesOf(claim), now),
  );
}

/**
 * An attempt that ends without an outcome, its password or code never judged: the database failed, or
 * the attempt gave its place up at the bound on requests held at once (waiting-requests.ts) while in
 * line for an argon2 slot. Its places go back to the counters and nothing is counted; were they left,
 * they would keep the account's other attempts waiting until the claims lapse.
 */
export async function abandonLoginAttempt(deps: LoginProtectionDeps, claim: LoginClaim): Promise<void> {
  for (const counter of counterClaims(claim, deps.clock.now())) await counter.release(deps.db);
}

/**
 * Runs `check` (the password's or code's) for a claimed attempt: should it throw instead of answering,
 * the attempt is abandoned (abandonLoginAttempt) before the error goes on.
 */
export async function judgedOrAbandoned<T>(
  deps: LoginProtectionDeps,
  claim: LoginClaim,
  check: () => Promise<T>,
): Promise<T> {
  try {
    return await check();
  } catch (error) {
    // A database that failed the check may fail this too: then the claims lapse on their own.
    await abandonLoginAttempt(deps, claim).catch(() => undefined);
    throw error;
  }
}

/**
 * A password proven outside a login (e.g. the current password of a password change): the same as a
 * successful login for the counters, without the login audit event. The account-wide count stays (a
 * distributed attacker must not win a new hundred guesses each time the owner signs in).
 */
export async function releaseLoginAttempt(
  deps: LoginProtectionDeps,
  attempt: LoginAttempt & { userId: string; claim?: LoginClaim | undefined },
): Promise<void> {
  const claim = attempt.claim ?? (await claimFor(deps, attempt));
  await releaseTogether(deps.db, releasesOf(claim), deps.clock.now());
}

/**
 * Clears an account's lockouts, every source's and the account-wide one (its owner proved control of
 * a contact, e.g. by a password reset).
 */
export async function clearAccountLockout(db: Queryable, userId: string): Promise<void> {
  const account = lockoutSubject({ userId })!;
  await clearAccountLadders(db, account);
  await clearAccountFailures(db, account);
}
