import type { Clock } from '../../clock.js';
import type { Database } from '../../db/database.js';
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

/**
 * A user without a password (signed up through a third-party provider, or passwordless) sets one from
 * the security settings; the route asks for a recent sign-in, as every sign-in method change does. The
 * check that none exists is repeated under the lock on the user's row, so two requests can't both set
 * one. An account that has a password changes it with the current one instead.
 */
export async function setFirstPassword(
  deps: FirstPasswordDeps,
  change: { userId: string; newPassword: string; newPasswordConfirmation: string; request: RequestInfo },
): Promise<void> {
  if (change.newPassword !== change.newPasswordConfirmation) throw passwordMismatch();
  const user = await findUserById(deps.db, change.userId);
  if (!user || user.status !== 'active')
    throw new ApiError(401, 'unauthorized', 'This account is not active.');
  if (await findPasswordHash(deps.db, user.id)) throw passwordAlreadySet();
  assertPasswordAcceptable(change.newPassword, [user.email ?? '', user.phone ?? '']);
  const hash = await hashPassword(change.newPassword, deps.passwordHashing);
  await deps.db.transaction(async (trx) => {
    await trx('users').where({ id: user.id }).forUpdate().first('id');
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
