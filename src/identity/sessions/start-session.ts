import crypto from 'node:crypto';
import type { Queryable } from '../../db/database.js';
import type { UserAccess } from '../access/user-access.js';
import type { RequestInfo } from '../auth-flow/step.js';
import { browserNameOf } from './browser-name.js';
import { accessTokenForSession, type MainAuthSigning } from './main-auth-tokens.js';
import { issueRefreshToken } from './refresh-tokens.js';
import { sessionInsert, type Session } from './sessions.js';

/** What a successful login or refresh hands to the client. */
export interface SessionTokens {
  session: Session;
  accessToken: string;
  expiresIn: number;
  /** Goes only into the httpOnly cookie, never into a response body. */
  refreshToken: { value: string; expiresAt: Date };
}

export interface SignIn {
  userId: string;
  /** The methods the login proved (amr values, e.g. pwd, otp), recorded as the session's auth_method. */
  authMethods: string[];
  request: RequestInfo;
  deviceBindingId?: string | undefined;
  /** The user's roles and permissions, when already read in this transaction. */
  access?: UserAccess | undefined;
  /** When the user authenticated, if not now (inbound SSO carries the original sign-in's time). */
  authenticatedAt?: Date | undefined;
  /** The session that vouched for this sign-in (a QR approval): the new one ends with it. */
  startedBySessionId?: string | undefined;
  /** The grant an inbound login's access token came from: revoking it ends the new session. */
  fromGrantId?: string | undefined;
}

/**
 * Starts a main-auth session after a successful login: the session record, its first refresh token
 * and an access token. Runs inside the caller's transaction (the one that ends the auth flow).
 */
export async function startSession(
  trx: Queryable,
  signing: MainAuthSigning,
  signIn: SignIn,
  now: Date,
): Promise<SessionTokens> {
  const refreshTokenId = crypto.randomUUID();
  const { insert, session } = sessionInsert(
    trx,
    {
      id: crypto.randomUUID(),
      refreshTokenId,
      userId: signIn.userId,
      deviceBindingId: signIn.deviceBindingId,
      userAgent: signIn.request.userAgent,
      ipAddress: signIn.request.ip,
      browserName: browserNameOf(signIn.request.userAgent),
      authMethod: signIn.authMethods.join('+') || 'unknown',
      authenticatedAt: signIn.authenticatedAt,
      startedBySessionId: signIn.startedBySessionId,
      fromGrantId: signIn.fromGrantId,
    },
    now,
  );
  // The session and its first token in one statement: the token's foreign key to the session is
  // checked at the end of the statement, when the session's row is there.
  const refreshToken = await issueRefreshToken(trx, session, now, refreshTokenId, (tokenInsert) =>
    tokenInsert.with('new_session', insert),
  );
  const access = await accessTokenForSession(trx, signing, session, refreshToken.id, now, signIn.access);
  return {
    session,
    accessToken: access.token,
    expiresIn: access.expiresIn,
    refreshToken: { value: refreshToken.value, expiresAt: session.expiresAt },
  };
}
