import type { Queryable } from '../../db/database.js';
import type { RequestInfo } from '../auth-flow/step.js';
import { findUserById, type User } from '../users/user.js';
import { deviceBindingFor } from './device-bindings.js';
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
  userId: string,
  now: Date,
): Promise<DeviceBound> {
  const device = await deviceBindingFor(trx, presentedCookie, request, now);
  const user = await findUserById(trx, userId);
  const seenBefore = user ? await isAccountSavedOnDevice(trx, device.id, user.id) : true;
  if (user) await saveAccountOnDevice(trx, device.id, user, now);
  return {
    deviceBindingId: device.id,
    newDeviceSecret: device.newSecret,
    firstOnDevice: seenBefore ? undefined : user,
  };
}
