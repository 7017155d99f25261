import { randomSecret, sha256 } from '../../crypto/digest.js';
import type { Queryable } from '../../db/database.js';

/** Spec: inbound SSO artefacts live 60 seconds. */
export const inboundLoginTokenLifetimeSeconds = 60;

/**
 * A new one-time login token (256 random bits) for a user, handed out to one client. `authTime` is when
 * the user last authenticated (the access token's auth_time): the session it starts keeps it.
 * `startedBySessionId` is the main-auth session the access token's grant was made from (a one-time SSO
 * code it asked for, a browser its QR approval signed in): the session the token starts ends with it.
 * `grantId` is the access token's grant: the session the token starts ends when it is revoked.
 */
export async function storeInboundLoginToken(
  db: Queryable,
  grant: {
    userId: string;
    clientId: string;
    authTime: Date;
    startedBySessionId?: string | undefined;
    grantId?: string | undefined;
  },
  now: Date,
): Promise<{ token: string; expiresAt: Date }> {
  const token = randomSecret(32);
  const expiresAt = new Date(now.getTime() + inboundLoginTokenLifetimeSeconds * 1000);
  await db('inbound_login_tokens').insert({
    token_hash: sha256(token),
    user_id: grant.userId,
    client_id: grant.clientId,
    auth_time: grant.authTime,
    started_by_session_id: grant.startedBySessionId ?? null,
    grant_id: grant.grantId ?? null,
    expires_at: expiresAt,
    created_at: now,
  });
  return { token, expiresAt };
}

/**
 * The user and the main-auth session behind a login token's grant (started_by_session_id), read without
 * using the token: a redemption holds that session before it uses the token, in the order of every
 * revocation (sessions, then tokens: endSessionsFromGrants, sessions.ts). Undefined for an unknown token.
 */
export async function inboundLoginTokenStarter(
  db: Queryable,
  token: string,
): Promise<{ userId: string; startedBySessionId: string | undefined } | undefined> {
  const row: { user_id: string; started_by_session_id: string | null } | undefined = await db(
    'inbound_login_tokens',
  )
    .where({ token_hash: sha256(token) })
    .first('user_id', 'started_by_session_id');
  return row
    ? { userId: row.user_id, startedBySessionId: row.started_by_session_id ?? undefined }
    : undefined;
}

/**
 * Uses a login token: one conditional UPDATE, so parallel uses of one token sign in once. The token is
 * looked up by its SHA-256 (it has 256 random bits: nothing about it leaks through the lookup's time).
 * Undefined when it is unknown, expired or used, or when the client it was handed to has since been
 * disabled, deleted, lost its first-party mark or the `roles` scope: only a client whose tokens carry
 * the user's authority may sign people in here, at redemption as at issue.
 */
export async function redeemInboundLoginToken(
  db: Queryable,
  token: string,
  now: Date,
): Promise<
  | {
      userId: string;
      clientId: string;
      authTime: Date;
      startedBySessionId: string | undefined;
      grantId: string | undefined;
    }
  | undefined
> {
  // A token made before auth_time was recorded is refused: its session would pass for a fresh sign-in.
  const result = await db.raw(
    `update inbound_login_tokens set used_at = cast(? as timestamptz)
     where token_hash = ? and used_at is null and expires_at > cast(? as timestamptz)
       and auth_time is not null
       and exists (select 1 from oauth_clients where oauth_clients.client_id = inbound_login_tokens.client_id
                   and oauth_clients.is_active and oauth_clients.first_party
                   and 'roles' = any(oauth_clients.allowed_scopes))
     returning user_id, client_id, auth_time, started_by_session_id, grant_id`,
    [now, sha256(token), now],
  );
  const row = (
    result.rows as {
      user_id: string;
      client_id: string;
      auth_time: Date;
      started_by_session_id: string | null;
      grant_id: string | null;
    }[]
  )[0];
  return row
    ? {
        userId: row.user_id,
        clientId: row.client_id,
        authTime: row.auth_time,
        startedBySessionId: row.started_by_session_id ?? undefined,
        grantId: row.grant_id ?? undefined,
      }
    : undefined;
}
