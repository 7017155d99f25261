import { ApiError } from '../../http/api-error.js';
import { auditEventTypes, writeAuditEvent } from '../audit/audit-log.js';
import { clearAccountLockout } from '../brute-force/login-protection.js';
import { endpointLimits, enforceEndpointLimit } from '../brute-force/endpoint-limits.js';
import { channelOf } from '../transports/transport.js';
import type { TransportChoice } from '../transports/transport-registry.js';
import { parseIdentifier, type Identifier } from '../users/contact.js';
import { findUserById, findUserByIdentifier, userFromRow, type User, type UserRow } from '../users/user.js';
import {
  checkVerificationCode,
  confirmVerificationCode,
  sendVerificationCode,
  type ConfirmedCode,
} from '../verification/verification-codes.js';
import { savePasswordHash } from './password-credential.js';
import type { PasswordDeps } from './password-deps.js';
import { hashPassword } from './password-hash.js';
import { assertPasswordAcceptable } from './password-policy.js';

export type ForgotPasswordOutcome =
  | { status: 'code_sent'; expiresAt: Date; resendAfterSeconds: number }
  | { status: 'choose_transport'; transports: TransportChoice[] };

export const invalidIdentifier = () =>
  new ApiError(400, 'invalid_identifier', 'Enter an email address or a phone number in international form.');

export function requireIdentifier(input: string): Identifier {
  const identifier = parseIdentifier(input);
  if (!identifier) throw invalidIdentifier();
  return identifier;
}

/** The account a reset may be sent for: active, and the identifier is one of its verified contacts. */
function resettable(user: User | undefined, identifier: Identifier): user is User {
  if (!user || user.status !== 'active') return false;
  return identifier.kind === 'email' ? user.emailVerified : user.phoneVerified;
}

/**
 * The contact a reset code was sent to is still a verified contact of its account. A code keeps the
 * account it was sent for; if the email or phone was replaced or removed since, whoever still reads the
 * old one must not reset the password with it (the change is often made because they do).
 */
function stillReaches(user: User, identifier: Identifier): boolean {
  return identifier.kind === 'email'
    ? user.email === identifier.value && user.emailVerified
    : user.phone === identifier.value && user.phoneVerified;
}

/**
 * Step 1 of the forgotten-password path: a code (and a link to /<lang>/reset-password carrying it) sent
 * to the identifier. When several transports can deliver to it and none was chosen, the choices are
 * returned instead. The answer is the same whether an account has the identifier or not: no account
 * gets a decoy code (stored, not sent), a real one is delivered in the background so the answer's
 * timing does not tell either.
 */
export async function requestPasswordReset(
  deps: PasswordDeps,
  request: {
    identifier: string;
    transport?: string | undefined;
    lang: string;
    ip: string;
    addressBlock: string;
  },
): Promise<ForgotPasswordOutcome> {
  const identifier = requireIdentifier(request.identifier);
  await enforceEndpointLimit(
    deps.rateLimits,
    endpointLimits.passwordForgot,
    `${request.addressBlock}|${identifier.value}`,
  );
  const choices = deps.transports.transportsFor(channelOf(identifier));
  if (choices.length > 1 && request.transport === undefined) {
    return { status: 'choose_transport', transports: choices };
  }
  const user = await findUserByIdentifier(deps.db, identifier);
  const known = resettable(user, identifier);
  const link = new URL(`${deps.issuer}/${request.lang}/reset-password`);
  link.searchParams.set('identifier', identifier.value);
  const sent = await sendVerificationCode(deps, {
    identifier,
    purpose: 'reset_password',
    ip: request.ip,
    addressBlock: request.addressBlock,
    userId: known ? user.id : undefined,
    link: link.toString(),
    transport: request.transport,
    delivery: known ? 'background' : 'none',
    lang: request.lang,
  });
  return { status: 'code_sent', ...sent };
}

/** Step 2: is the code right? Wrong codes count against the code's 5 attempts; a right one stays usable. */
export async function verifyPasswordResetCode(
  deps: PasswordDeps,
  request: { identifier: string; code: string; addressBlock: string },
): Promise<void> {
  await enforceEndpointLimit(deps.rateLimits, endpointLimits.passwordVerifyCode, request.addressBlock);
  const identifier = requireIdentifier(request.identifier);
  await checkVerificationCode(deps, {
    identifier: identifier.value,
    purpose: 'reset_password',
    code: request.code,
  });
}

export const passwordMismatch = () =>
  new ApiError(400, 'password_mismatch', 'The new password and its confirmation are not the same.');

/**
 * Step 3: the new password. In one transaction: the code is redeemed, the password replaced, every
 * session of the user revoked (whoever knew the old password is signed out), the lockout cleared and
 * identity.password.reset written. Then the user is told, at their primary contact.
 */
export async function resetPassword(
  deps: PasswordDeps,
  request: {
    identifier: string;
    code: string;
    password: string;
    passwordConfirmation: string;
    ip: string;
    addressBlock: string;
    userAgent: string;
  },
): Promise<{ revokedSessions: number }> {
  await enforceEndpointLimit(deps.rateLimits, endpointLimits.passwordReset, request.addressBlock);
  const identifier = requireIdentifier(request.identifier);
  if (request.password !== request.passwordConfirmation) throw passwordMismatch();
  assertPasswordAcceptable(request.password);
  const code = { identifier: identifier.value, purpose: 'reset_password' as const, code: request.code };
  // Checked before the transaction: a wrong code is counted for good, not undone with a rollback.
  const checked: ConfirmedCode = await checkVerificationCode(deps, code);
  const user = checked.userId ? await findUserById(deps.db, checked.userId) : undefined;
  if (!user || user.status !== 'active' || !stillReaches(user, identifier)) {
    throw new ApiError(400, 'invalid_code', 'This code is not right.');
  }
  assertPasswordAcceptable(request.password, [user.email ?? '', user.phone ?? '']);
  const hash = await hashPassword(request.password, deps.passwordHashing);
  const result = await deps.db.transaction(async (trx) => {
    await confirmVerificationCode(deps, { ...code, userId: user.id }, trx);
    const now = deps.clock.now();
    await savePasswordHash(trx, user.id, hash, now);
    // Again, holding the user's row until this commits: an email or phone replaced (or a disable)
    // since the check above, while the password was hashed, made this code one of a contact that no
    // longer reaches the account (an old inbox the owner just replaced), which must not set it.
    const row: UserRow | undefined = await trx<UserRow>('users')
      .where({ id: user.id })
      .forNoKeyUpdate()
      .first();
    const current = row ? userFromRow(row) : undefined;
    if (!current || current.status !== 'active' || !stillReaches(current, identifier)) {
      throw new ApiError(400, 'invalid_code', 'This code is not right.');
    }
    const revokedSessions = await deps.revokeOtherSessions(trx, user.id);
    await clearAccountLockout(trx, user.id);
    await writeAuditEvent(
      trx,
      {
        type: auditEventTypes.passwordReset,
        userId: user.id,
        ip: request.ip,
        userAgent: request.userAgent,
        details: { revokedSessions },
      },
      now,
    );
    return { revokedSessions };
  });
  deps.notifications.notify(user, { kind: 'password_reset' });
  return result;
}
