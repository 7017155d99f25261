import type { Queryable } from '../../db/database.js';
import type { RequestInfo } from '../auth-flow/step.js';
import { findUserById, type User } from '../users/user.js';
import { newDeviceBinding, touchDeviceBinding } from './device-bindings.js';
import { isAccountSavedOnDevice, saveAccountOnDevice } from './saved-accounts.js';

export interface DeviceBound {
  deviceBindingId: string;
  /** The cookie to set when the device was not bound yet. */
  newDeviceSecret?: string | undefined;
  /** The user, when this device never had this account saved: a new-device sign-in to announce. */
  firstOnDevice?: User | undefined;
}

/**
 * A sign-in binds the browser (device cookie found or new) and saves the account on it, whichever way the
 * person signed in (the identity API or the OIDC pages). The account saved on a device is what makes the
 * device "seen before" for the user: the account's own lockout source, and no new-device notice.
 */
export async function bindDeviceAtSignIn(
  trx: Queryable,
  presentedCookie: string | undefined,
  request: RequestInfo,
  /** The user signing in, or their id to read them by (undefined: the user is gone). */
  who: string | { user: User | undefined },
  now: Date,
  /**
   * The sign-in was vouched for by another session (a QR approval), not proven here: the account is
   * saved on the device, which does not become its own lockout source (login-source.ts).
   */
  vouchedBySession = false,
): Promise<DeviceBound> {
  const user = typeof who === 'string' ? await findUserById(trx, who) : who.user;
  const known = presentedCookie ? await touchDeviceBinding(trx, presentedCookie, now) : undefined;
  if (known) {
    const seenBefore = user ? await isAccountSavedOnDevice(trx, known, user.id) : true;
    if (user) await saveAccountOnDevice(trx, known, user, now, undefined, !vouchedBySession);
    return { deviceBindingId: known, firstOnDevice: seenBefore ? undefined : user };
  }
  // A new binding: no account was ever saved on it. Stored in the statement that saves the account.
  const device = newDeviceBinding(trx, request, now);
  if (user)
    await saveAccountOnDevice(
      trx,
      device.id,
      user,
      now,
      (save) => save.with('new_device', device.insert),
      !vouchedBySession,
    );
  else await device.insert;
  return { deviceBindingId: device.id, newDeviceSecret: device.secret, firstOnDevice: user };
}
