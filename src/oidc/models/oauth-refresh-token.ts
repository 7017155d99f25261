import { sha256 } from '../../crypto/digest.js';
import type { Queryable } from '../../db/database.js';
import { endSessionsFromGrants } from '../../identity/sessions/sessions.js';
import { grantIdsOf } from './grant-revocation.js';
import { recordRevokedGrants } from './revoked-grant.js';

/** An OAuth refresh token that can still be used (table oauth_refresh_tokens). */
export interface ActiveRefreshToken {
  userId: string;
  clientId: string;
  scopes: string[];
  familyId: string;
  issuedAt: Date;
  expiresAt: Date;
}

/**
 * The refresh token with this value, if it is active: not rotated out, not revoked, not expired, and
 * its grant (the family) not revoked.
 */
export async function findActiveRefreshToken(
  db: Queryable,
  token: string,
  now: Date,
): Promise<ActiveRefreshToken | undefined> {
  const row:
    | {
        user_id: string;
        client_id: string;
        scopes: string[];
        token_family_id: string;
        created_at: Date;
        expires_at: Date;
      }
    | undefined = await db('oauth_refresh_tokens as token')
    .join('oidc_payloads as grant', (join) =>
      join.on('grant.id', 'token.token_family_id').andOnVal('grant.model', 'Grant'),
    )
    .where('token.token_hash', sha256(token))
    .whereNull('token.revoked_at')
    .where('token.expires_at', '>', now)
    // A token outlives its grant when rotated late in the grant's life: the grant's end is the token's.
    .where((grant) => grant.whereNull('grant.expires_at').orWhere('grant.expires_at', '>', now))
    .first(
      'token.user_id',
      'token.client_id',
      'token.scopes',
      'token.token_family_id',
      'token.created_at',
      'token.expires_at',
    );
  return (
    row && {
      userId: row.user_id,
      clientId: row.client_id,
      scopes: row.scopes,
      familyId: row.token_family_id,
      issuedAt: row.created_at,
      expiresAt: row.expires_at,
    }
  );
}

/**
 * Revokes every authorization of a user for a client, whatever browser it came from (logout, consent
 * withdrawal): their refresh tokens are revoked, the grants behind them deleted, and the grants
 * recorded as revoked so that the access tokens issued from them turn inactive too. Returns how many
 * refresh tokens were active.
 */
export async function revokeRefreshTokensOf(
  db: Queryable,
  userId: string,
  clientId: string,
  now: Date,
): Promise<number> {
  // Sessions first (endSessionsFromGrants): the main-auth sessions inbound SSO started from the access
  // tokens of these grants end with them. Read here, revoked below.
  await endSessionsFromGrants(db, await grantIdsOf(db, { clientId, userId }), now);
  const revoked: { token_family_id: string }[] = await db('oauth_refresh_tokens')
    .where({ user_id: userId, client_id: clientId })
    .whereNull('revoked_at')
    .update({ revoked_at: now }, ['token_family_id']);
  const grants: { id: string }[] = await db('oidc_payloads')
    .where({ model: 'Grant', account_id: userId })
    .whereRaw(`payload->>'clientId' = ?`, [clientId])
    .delete(['id']);
  await recordRevokedGrants(
    db,
    [...revoked.map((token) => token.token_family_id), ...grants.map((grant) => grant.id)],
    now,
  );
  return revoked.length;
}
