import type { Queryable } from '../../db/database.js';
import type { SigningKey } from '../../keys/signing-keys.js';
import { issueMainAuthAccessToken } from '../../tokens/main-auth-access-token.js';
import { loadUserAccess, type UserAccess } from '../access/user-access.js';
import type { Session } from './sessions.js';

/** What signing a main-auth access token needs: the main-auth key and the token's iss and aud. */
export interface MainAuthSigning {
  key: SigningKey;
  issuer: string;
  audience: string;
}

/**
 * A main-auth access token for a session: roles and permissions are read from storage at each issue
 * (spec: Tokens), so a role change shows at the next refresh. `tokenId` is the session's current
 * refresh token, which is how revoke-all finds the current session. `access` when the caller has just
 * read it in the same transaction (a login reads the user and their access together).
 */
export async function accessTokenForSession(
  db: Queryable,
  signing: MainAuthSigning,
  session: Pick<Session, 'id' | 'userId' | 'authMethod' | 'authTime'>,
  refreshTokenId: string,
  now: Date,
  access?: UserAccess,
): Promise<{ token: string; expiresIn: number }> {
  access ??= await loadUserAccess(db, session.userId);
  return issueMainAuthAccessToken(
    signing.key,
    { issuer: signing.issuer, audience: signing.audience },
    {
      userId: session.userId,
      tokenId: refreshTokenId,
      sessionId: session.id,
      authMethod: session.authMethod,
      authTime: session.authTime,
      roles: access.roles,
      permissions: access.permissions,
    },
    now,
  );
}
