import type { Clock } from '../../clock.js';
import type { Database } from '../../db/database.js';
import { ApiError } from '../../http/api-error.js';
import { holdUnrevokedSession } from '../../identity/sessions/sessions.js';
import { findClient } from '../models/oauth-client.js';
import { isOidcScope, splitScope } from '../scopes.js';
import { scopesConsentedForCode } from './consented-code-scopes.js';
import { acceptsSsoCodes } from './sso-clients.js';
import { storeSsoCode } from './sso-code-records.js';
import { generateSsoCode, hashSsoCode, ssoCodeLifetimeSeconds } from './sso-code.js';

export interface IssuedSsoCode {
  code: string;
  clientId: string;
  scope: string;
  expiresAt: Date;
}

/**
 * A one-time code for a signed-in user to hand to one named client (POST /oauth/sso/otc). The scopes
 * asked for are filtered against the client's allowed scopes, as at authorize, `openid` always, and
 * for a client not first-party against what the user consented to it (consented-code-scopes.ts).
 * Only the code's SHA-256 is stored, with the user, the client and the scopes; no token exists yet.
 */
export async function issueSsoCode(
  deps: { db: Database; clock: Clock },
  request: {
    userId: string;
    clientId: string;
    scope: string | undefined;
    ip: string;
    /**
     * When the user last authenticated (their main-auth session's last sign-in or re-authentication).
     * The code's tokens carry it as auth_time: asking for a code proves no new authentication, so it
     * must not let an old session pass for a fresh one (re-authentication checks, inbound SSO).
     */
    authTime: Date;
    /** The main-auth session asking: the code ends with it (a logout, a revocation). */
    sessionId: string | undefined;
  },
): Promise<IssuedSsoCode> {
  const client = await findClient(deps.db, request.clientId);
  if (!client || !acceptsSsoCodes(client)) {
    throw new ApiError(
      400,
      'invalid_client',
      'This client does not exist, is disabled, or does not take users by one-time code ' +
        '(only active confidential clients of the authorization code flow do).',
    );
  }
  const allowed = new Set(client.allowedScopes.filter(isOidcScope));
  const requested = splitScope(request.scope ?? 'openid');
  const allowedScope = [...new Set(['openid', ...requested])].filter((item) => allowed.has(item as never));
  if (!allowedScope.includes('openid')) {
    throw new ApiError(400, 'invalid_client', 'This client is not allowed the openid scope.');
  }
  const scope = await scopesConsentedForCode(
    deps.db,
    { userId: request.userId, clientId: client.clientId, firstParty: client.firstParty },
    allowedScope,
  );
  if (!scope.includes('openid')) {
    throw new ApiError(
      403,
      'consent_required',
      'You have not consented to this application yet: sign in to it once through its own sign-in page.',
    );
  }
  const now = deps.clock.now();
  const code = generateSsoCode();
  const expiresAt = new Date(now.getTime() + ssoCodeLifetimeSeconds * 1000);
  await deps.db.transaction(async (trx) => {
    // The session is held until the code is stored: a revocation racing the request retires the code.
    const { sessionId } = request;
    if (sessionId === undefined || !(await holdUnrevokedSession(trx, request.userId, sessionId))) {
      throw new ApiError(401, 'session_ended', 'This session has ended. Sign in again.');
    }
    await storeSsoCode(
      trx,
      {
        clientId: client.clientId,
        userId: request.userId,
        codeHash: hashSsoCode(code),
        scope: scope.join(' '),
        ip: request.ip,
        expiresAt,
        authTime: request.authTime,
        sessionId,
      },
      now,
    );
  });
  return { code, clientId: client.clientId, scope: scope.join(' '), expiresAt };
}
