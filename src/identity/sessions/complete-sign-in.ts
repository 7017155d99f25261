import type { Queryable } from '../../db/database.js';
import { ApiError } from '../../http/api-error.js';
import type { FlowKind } from '../auth-flow/flow-session.js';
import type { RequestInfo } from '../auth-flow/step.js';
import { findUserWithAccess } from '../access/user-access.js';
import { userFromRow, type User, type UserRow } from '../users/user.js';
import { bindDeviceAtSignIn } from './bind-device.js';
import type { MainAuthSigning } from './main-auth-tokens.js';
import { startSession, type SessionTokens } from './start-session.js';
import { holdUnrevokedSession } from './sessions.js';

/**
 * The user of a sign-in is gone or disabled (a disable that raced the sign-in, or an inbound login for
 * a user disabled since): no session is started. Refused as a login of an unknown account is.
 */
export class InactiveUserError extends ApiError {
  constructor() {
    super(401, 'unauthorized', 'This account cannot sign in.');
  }
}

export interface CompletedSignIn extends SessionTokens {
  newDeviceSecret?: string | undefined;
  /** A login on a device this user never signed in on: the user, to be told once the flow is committed. */
  newDeviceFor?: User | undefined;
}

/**
 * The end of a login or registration through the API, inside the transaction that ends the flow: the
 * device binding (found from its cookie or new), the main-auth session with its tokens, and the
 * account saved on the device. The account saved on a device is also how a device is "seen before" for
 * a user: a login anywhere else is a new-device sign-in (a registration is not: the account is new).
 */
export async function completeSignIn(
  trx: Queryable,
  signing: MainAuthSigning,
  signIn: {
    flow: FlowKind;
    userId: string;
    authMethods: string[];
    request: RequestInfo;
    deviceCookie: string | undefined;
    /** When the user authenticated, if not now (inbound SSO: the original sign-in). */
    authenticatedAt?: Date | undefined;
    /**
     * The session that vouched for this sign-in (a QR approval, or the one an inbound login's grant was
     * made from): the new one ends with it.
     */
    startedBySessionId?: string | undefined;
    /** The grant an inbound login's access token came from: revoking it ends the new session. */
    fromGrantId?: string | undefined;
  },
  now: Date,
): Promise<CompletedSignIn> {
  // The user's record (saved on the device) and access (the token's claims) in one read.
  const found = await findUserWithAccess<UserRow>(trx, signIn.userId);
  // The last word on who may get a session: every way in (a flow, the OIDC pages, federation, inbound
  // SSO) ends here, in the transaction that starts it.
  if (!found || found.user.status !== 'active') throw new InactiveUserError();
  const user = userFromRow(found.user);
  // A sign-in vouched for by a session (a QR approval) starts only while that session is live, held
  // until this commits: a revocation racing it waits and ends the new session with it (sessions.ts),
  // or came first, between the approval's take and now, and no session starts.
  if (
    signIn.startedBySessionId !== undefined &&
    !(await holdUnrevokedSession(trx, signIn.userId, signIn.startedBySessionId))
  ) {
    throw new ApiError(410, 'qr_expired', 'This QR code expired or was used. Start again.');
  }
  const device = await bindDeviceAtSignIn(
    trx,
    signIn.deviceCookie,
    signIn.request,
    { user },
    now,
    signIn.startedBySessionId !== undefined,
  );
  const tokens = await startSession(
    trx,
    signing,
    { ...signIn, deviceBindingId: device.deviceBindingId, access: found.access },
    now,
  );
  return {
    ...tokens,
    newDeviceSecret: device.newDeviceSecret,
    newDeviceFor: signIn.flow === 'login' ? device.firstOnDevice : undefined,
  };
}
