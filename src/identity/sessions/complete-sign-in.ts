import type { Queryable } from '../../db/database.js';
import type { RequestInfo } from '../auth-flow/step.js';
import { findUserById } from '../users/user.js';
import { deviceBindingFor } from './device-bindings.js';
import type { MainAuthSigning } from './main-auth-tokens.js';
import { saveAccountOnDevice } from './saved-accounts.js';
import { startSession, type SessionTokens } from './start-session.js';

/**
 * The end of a login or registration through the API, inside the transaction that ends the flow: the
 * device binding (found from its cookie or new), the main-auth session with its tokens, and the
 * account saved on the device.
 */
export async function completeSignIn(
  trx: Queryable,
  signing: MainAuthSigning,
  signIn: { userId: string; authMethods: string[]; request: RequestInfo; deviceCookie: string | undefined },
  now: Date,
): Promise<SessionTokens & { newDeviceSecret?: string | undefined }> {
  const device = await deviceBindingFor(trx, signIn.deviceCookie, signIn.request, now);
  const tokens = await startSession(trx, signing, { ...signIn, deviceBindingId: device.id }, now);
  const user = await findUserById(trx, signIn.userId);
  if (user) await saveAccountOnDevice(trx, device.id, user, now);
  return { ...tokens, newDeviceSecret: device.newSecret };
}
