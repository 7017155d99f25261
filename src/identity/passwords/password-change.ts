import { ApiError } from '../../http/api-error.js';
import { auditEventTypes, writeAuditEvent } from '../audit/audit-log.js';
import {
  assertLoginAllowed,
  judgedOrAbandoned,
  recordLoginFailure,
  releaseLoginAttempt,
} from '../brute-force/login-protection.js';
import { findUserById } from '../users/user.js';
import { findPasswordHash, replacePasswordHash } from './password-credential.js';
import type { PasswordDeps } from './password-deps.js';
import { hashPassword, verifyPassword } from './password-hash.js';
import { assertPasswordAcceptable } from './password-policy.js';
import { passwordMismatch } from './password-reset.js';

export interface PasswordChange {
  userId: string;
  /** The session making the change: it stays; every other session of the user is revoked. */
  sessionId: string | undefined;
  currentPassword: string;
  newPassword: string;
  newPasswordConfirmation: string;
  ip: string;
  /** What the brute-force counters key on (RequestInfo.addressBlock). */
  addressBlock: string;
  userAgent: string;
}

/**
 * A signed-in user changes the password: the current one is checked under the same brute-force
 * protection as a login (a stolen access token can't be used to guess it), the new one must pass the
 * policy; then in one transaction the hash is replaced, the user's other sessions revoked and
 * identity.password.changed written. The current password is a re-authentication: the session records
 * it (so the change needs no separate one, and the next few minutes allow other sensitive changes).
 * The user is told, at their primary contact.
 */
export async function changePassword(
  deps: PasswordDeps,
  change: PasswordChange,
): Promise<{ revokedSessions: number }> {
  if (change.newPassword !== change.newPasswordConfirmation) throw passwordMismatch();
  const user = await findUserById(deps.db, change.userId);
  if (!user || user.status !== 'active') {
    throw new ApiError(401, 'unauthorized', 'This account is not active.');
  }
  const storedHash = await findPasswordHash(deps.db, user.id);
  if (!storedHash) {
    throw new ApiError(
      409,
      'password_not_set',
      'This account has no password yet. Set one with the forgotten-password path.',
    );
  }
  const protection = { db: deps.db, clock: deps.clock };
  const identifier = user.email ?? user.phone ?? '';
  // The session is the attempt's source: a stolen token can't guess on from address after address.
  const attempt = {
    userId: user.id,
    ip: change.ip,
    addressBlock: change.addressBlock,
    sessionId: change.sessionId,
  };
  const claim = await assertLoginAllowed(protection, attempt);
  const verified = await judgedOrAbandoned(protection, claim, () =>
    verifyPassword(storedHash, change.currentPassword, deps.passwordHashing),
  );
  if (!verified) {
    await recordLoginFailure(protection, {
      ...attempt,
      identifier,
      userAgent: change.userAgent,
      method: 'password_change',
      claim,
    });
    throw new ApiError(400, 'invalid_password', 'The current password is not right.');
  }
  await releaseLoginAttempt(protection, { ...attempt, claim });
  assertPasswordAcceptable(change.newPassword, [user.email ?? '', user.phone ?? '']);
  const hash = await hashPassword(change.newPassword, deps.passwordHashing);
  const result = await deps.db.transaction(async (trx) => {
    const now = deps.clock.now();
    // Only over the password just checked (compare-and-set): a reset or another change that committed
    // since (the owner taking the account back) is not written over with a password of whoever knew
    // the old one.
    if (!(await replacePasswordHash(trx, user.id, storedHash, hash, now))) {
      throw new ApiError(400, 'invalid_password', 'The current password is not right.');
    }
    if (change.sessionId) await deps.recordSessionAuthentication(trx, change.sessionId);
    const revokedSessions = await deps.revokeOtherSessions(trx, user.id, change.sessionId);
    await writeAuditEvent(
      trx,
      {
        type: auditEventTypes.passwordChanged,
        userId: user.id,
        ip: change.ip,
        userAgent: change.userAgent,
        details: { revokedSessions },
      },
      now,
    );
    return { revokedSessions };
  });
  deps.notifications.notify(user, { kind: 'password_changed' });
  return result;
}
