import type { Clock } from '../../clock.js';
import type { Database, Queryable } from '../../db/database.js';
import { ApiError } from '../../http/api-error.js';
import { auditEventTypes, writeAuditEvent } from '../audit/audit-log.js';
import type { RequestInfo } from '../auth-flow/step.js';
import type { SecurityNotifications } from '../notifications/security-notifications.js';
import { findUserById } from '../users/user.js';
import { findPasswordHash, savePasswordHash } from './password-credential.js';
import { hashPassword, type PasswordHashing } from './password-hash.js';
import { assertPasswordAcceptable } from './password-policy.js';
import { passwordMismatch } from './password-reset.js';

export interface FirstPasswordDeps {
  db: Database;
  clock: Clock;
  notifications: SecurityNotifications;
  passwordHashing: PasswordHashing;
}

const passwordAlreadySet = () =>
  new ApiError(409, 'password_already_set', 'This account has a password: change it with the current one.');

export interface FirstPasswordChange {
  userId: string;
  newPassword: string;
  newPasswordConfirmation: string;
  request: RequestInfo;
  /**
   * What lets this request act for the account (the main-auth session of its token, the onboarding of
   * its cookie), looked at again in the transaction that writes the password and held (its row locked)
   * until that commits; answers the error to refuse with once it has ended. The route looked at it
   * when the request began, but the password is hashed in between, which takes as long as the line of
   * the client's own address for argon2 (turns-per-address.ts): a logout, a revocation or a sign-out
   * everywhere in that time left a thief's request, holding a copied token or onboarding cookie, to
   * write a password of their choosing after it. A revocation racing the write waits for it, or
   * committed first and nothing is written.
   */
  holdStanding(trx: Queryable): Promise<ApiError | undefined>;
}

/**
 * A user without a password (signed up through a third-party provider, or passwordless) sets one from
 * the security settings; the route asks for a recent sign-in, as every sign-in method change does. The
 * check that none exists is repeated under the lock on the user's row, so two requests can't both set
 * one, and so are the account's status and the request's standing (`holdStanding`). An account that
 * has a password changes it with the current one instead.
 */
export async function setFirstPassword(deps: FirstPasswordDeps, change: FirstPasswordChange): Promise<void> {
  if (change.newPassword !== change.newPasswordConfirmation) throw passwordMismatch();
  const user = await findUserById(deps.db, change.userId);
  if (!user || user.status !== 'active')
    throw new ApiError(401, 'unauthorized', 'This account is not active.');
  if (await findPasswordHash(deps.db, user.id)) throw passwordAlreadySet();
  assertPasswordAcceptable(change.newPassword, [user.email ?? '', user.phone ?? '']);
  const hash = await hashPassword(change.newPassword, deps.passwordHashing);
  await deps.db.transaction(async (trx) => {
    // The user's row first, as a sign-out everywhere takes it (sessions.ts, revokeUserSessions), then
    // the standing: NO KEY UPDATE, so a logout's audit entry (which only names the user) doesn't wait
    // on this while this waits on the session the logout holds.
    const current: { status: string } | undefined = await trx('users')
      .where({ id: user.id })
      .forNoKeyUpdate()
      .first('status');
    if (current?.status !== 'active') throw new ApiError(401, 'unauthorized', 'This account is not active.');
    const ended = await change.holdStanding(trx);
    if (ended) throw ended;
    if (await findPasswordHash(trx, user.id)) throw passwordAlreadySet();
    const now = deps.clock.now();
    await savePasswordHash(trx, user.id, hash, now);
    await writeAuditEvent(
      trx,
      {
        type: auditEventTypes.passwordChanged,
        userId: user.id,
        ip: change.request.ip,
        userAgent: change.request.userAgent,
        details: { firstPassword: true },
      },
      now,
    );
  });
  deps.notifications.notify(user, { kind: 'password_changed' });
}
