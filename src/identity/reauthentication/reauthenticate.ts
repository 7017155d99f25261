import { ApiError } from '../../http/api-error.js';
import { auditEventTypes, writeAuditEvent } from '../audit/audit-log.js';
import type { RequestInfo } from '../auth-flow/step.js';
import { verifyUserTotp, type TotpDependencies } from '../auth-methods/totp-method.js';
import {
  abandonLoginAttempt,
  assertLoginAllowed,
  recordLoginFailure,
  releaseLoginAttempt,
} from '../brute-force/login-protection.js';
import { findPasswordHash } from '../passwords/password-credential.js';
import { verifyPassword, type PasswordHashing } from '../passwords/password-hash.js';
import type { SessionPolicy } from '../sessions/session-policy.js';
import { recordAuthentication, type Session } from '../sessions/sessions.js';
import type { Identifier } from '../users/contact.js';
import { findUserById, type User } from '../users/user.js';
import {
  confirmVerificationCode,
  sendVerificationCode,
  type VerificationDeps,
} from '../verification/verification-codes.js';
import { reauthenticationMethodsOf, type ReauthenticationMethod } from './reauthentication-methods.js';

export interface ReauthenticationDeps extends VerificationDeps {
  totp: TotpDependencies;
  sessionPolicy: SessionPolicy;
  passwordHashing: PasswordHashing;
}

/** What the user presents: the password, an authenticator code, or a code sent to a verified contact. */
export type ReauthenticationProof =
  | { method: 'password'; password: string }
  | { method: 'totp'; code: string }
  | { method: 'email_otp' | 'sms_otp'; code?: string | undefined; transport?: string | undefined };

export type ReauthenticationOutcome =
  | { status: 'reauthenticated'; method: ReauthenticationMethod; validUntil: Date }
  | { status: 'code_sent'; method: 'email_otp' | 'sms_otp'; expiresAt: Date; resendAfterSeconds: number };

const sessionEnded = () => new ApiError(401, 'session_ended', 'This session has ended. Sign in again.');

/**
 * POST /auth/reauthenticate: the signed-in user proves again who they are, with a method they have
 * (the password, a TOTP code, or a code sent to their verified email or phone). Every proof goes through
 * the same brute-force protection as a login (lockout ladder, IP throttle; the claim is taken before the
 * secret is looked at, and failures are audited as identity.login.failed with reason reauthentication),
 * so a stolen access token can't be used to guess. Success is recorded on the SESSION
 * (last_authenticated_at): sensitive changes are allowed for the policy's window from then.
 */
export async function reauthenticate(
  deps: ReauthenticationDeps,
  attempt: { session: Session; request: RequestInfo; proof: ReauthenticationProof },
): Promise<ReauthenticationOutcome> {
  const { session, request, proof } = attempt;
  const user = await findUserById(deps.db, session.userId);
  if (!user || user.status !== 'active') throw sessionEnded();
  const methods = await reauthenticationMethodsOf(deps.db, user.id);
  if (!methods.includes(proof.method)) {
    throw new ApiError(
      409,
      'method_not_available',
      'You can’t confirm it’s you with this method: use one you have set up.',
      { methods },
    );
  }
  if ((proof.method === 'email_otp' || proof.method === 'sms_otp') && !proof.code) {
    const sent = await sendVerificationCode(deps, {
      identifier: contactOf(user, proof.method),
      purpose: 'login',
      ip: request.ip,
      addressBlock: request.addressBlock,
      userId: user.id,
      transport: proof.transport,
    });
    return { status: 'code_sent', method: proof.method, ...sent };
  }

  const protection = { db: deps.db, clock: deps.clock };
  const method = proof.method === 'password' ? 'password' : proof.method === 'totp' ? 'totp' : 'otp';
  // The session is the attempt's source: a stolen token can't guess on from address after address.
  const loginAttempt = {
    userId: user.id,
    ip: request.ip,
    addressBlock: request.addressBlock,
    sessionId: session.id,
    method,
  };
  const claim = await assertLoginAllowed(protection, loginAttempt);
  try {
    await checkProof(deps, user, proof);
  } catch (error) {
    if (error instanceof ApiError && error.status < 500) {
      await recordLoginFailure(protection, {
        ...loginAttempt,
        identifier: user.email ?? user.phone ?? '',
        userAgent: request.userAgent,
        reason: 'reauthentication',
        claim,
      });
    } else {
      // Not judged (the database, or its place given up in line for argon2): nothing counted.
      await abandonLoginAttempt(protection, claim).catch(() => undefined);
    }
    throw error;
  }
  await releaseLoginAttempt(protection, { ...loginAttempt, claim });

  const now = deps.clock.now();
  const recorded = await deps.db.transaction(async (trx) => {
    if (!(await recordAuthentication(trx, session.id, deps.sessionPolicy, now))) return false;
    await writeAuditEvent(
      trx,
      {
        type: auditEventTypes.reauthenticated,
        userId: user.id,
        ip: request.ip,
        userAgent: request.userAgent,
        details: { method: proof.method, sessionId: session.id },
      },
      now,
    );
    return true;
  });
  if (!recorded) throw sessionEnded();
  return {
    status: 'reauthenticated',
    method: proof.method,
    validUntil: new Date(now.getTime() + deps.sessionPolicy.reauthenticationMaxAgeSeconds * 1000),
  };
}

async function checkProof(deps: ReauthenticationDeps, user: User, proof: ReauthenticationProof) {
  const now = deps.clock.now();
  if (proof.method === 'password') {
    if (
      !(await verifyPassword(await findPasswordHash(deps.db, user.id), proof.password, deps.passwordHashing))
    ) {
      throw new ApiError(400, 'invalid_password', 'The password is not right.');
    }
  } else if (proof.method === 'totp') {
    if (!(await verifyUserTotp(deps.db, deps.totp, user.id, proof.code, now))) {
      throw new ApiError(400, 'invalid_code', 'The code is not right. Try again.');
    }
  } else {
    await confirmVerificationCode(deps, {
      identifier: contactOf(user, proof.method).value,
      purpose: 'login',
      code: proof.code!,
      userId: user.id,
    });
  }
}

/** The verified contact a code method sends to (the method is active only when it is verified). */
function contactOf(user: User, method: 'email_otp' | 'sms_otp'): Identifier {
  return method === 'email_otp'
    ? { kind: 'email', value: user.email! }
    : { kind: 'phone', value: user.phone! };
}
