import crypto from 'node:crypto';
import { randomSecret, sha256 } from '../../crypto/digest.js';
import type { Knex } from 'knex';
import type { Queryable } from '../../db/database.js';
import { isUuid } from '../uuid.js';

/**
 * Main-auth refresh tokens (table refresh_tokens): 32 bytes of CSPRNG output (256 bits, base64url) the
 * client keeps in its cookie; only their SHA-256 is stored. Each is used once: a refresh revokes it
 * and issues the next one. (Deviation: the spec says UUID, whose 122 random bits are below the 128 bits
 * ASVS asks of a session token.)
 */
const refreshTokenBytes = 32;
const refreshTokenPattern = /^[A-Za-z0-9_-]{43}$/;

/**
 * A value shaped like one of our refresh tokens. UUIDs are the tokens issued before they became 256-bit
 * values: they keep working until their session ends (at most 30 days), then no UUID is live any more.
 */
const isRefreshTokenValue = (value: string): boolean => refreshTokenPattern.test(value) || isUuid(value);

export interface RefreshToken {
  id: string;
  sessionId: string;
  userId: string;
  isRevoked: boolean;
  expiresAt: Date;
}

interface RefreshTokenRow {
  id: string;
  session_id: string;
  user_id: string;
  is_revoked: boolean;
  expires_at: Date;
}

const fromRow = (row: RefreshTokenRow): RefreshToken => ({
  id: row.id,
  sessionId: row.session_id,
  userId: row.user_id,
  isRevoked: row.is_revoked,
  expiresAt: row.expires_at,
});

/**
 * Stores a new token for the session; answers its id and the value for the cookie. `alongside` adds
 * changes (CTEs) to the insert, run in the same statement (a new session with its first token).
 */
export async function issueRefreshToken(
  db: Queryable,
  session: { id: string; userId: string; expiresAt: Date },
  now: Date,
  id: string = crypto.randomUUID(),
  alongside?: (insert: Knex.QueryBuilder) => Knex.QueryBuilder,
): Promise<{ id: string; value: string }> {
  const value = randomSecret(refreshTokenBytes);
  const insert = db('refresh_tokens');
  await (alongside ? alongside(insert) : insert).insert({
    id,
    token_hash: sha256(value),
    session_id: session.id,
    user_id: session.userId,
    // Absolute expiry: rotation never extends a session beyond its 30 days.
    expires_at: session.expiresAt,
    created_at: now,
  });
  return { id, value };
}

/** The token with this value in any state (revoked and expired included). */
export async function findRefreshToken(db: Queryable, value: string): Promise<RefreshToken | undefined> {
  if (!isRefreshTokenValue(value)) return undefined;
  const row: RefreshTokenRow | undefined = await db('refresh_tokens')
    .where({ token_hash: sha256(value) })
    .first('id', 'session_id', 'user_id', 'is_revoked', 'expires_at');
  return row ? fromRow(row) : undefined;
}

/**
 * Uses the token up, as one compare-and-set: only a live token is revoked and returned. Of parallel
 * requests presenting the same token, exactly one gets it; the others get undefined.
 */
export async function consumeRefreshToken(
  db: Queryable,
  value: string,
  now: Date,
): Promise<RefreshToken | undefined> {
  if (!isRefreshTokenValue(value)) return undefined;
  const [row] = (await db('refresh_tokens')
    .where({ token_hash: sha256(value), is_revoked: false })
    .where('expires_at', '>', now)
    .update({ is_revoked: true, revoked_at: now }, [
      'id',
      'session_id',
      'user_id',
      'is_revoked',
      'expires_at',
    ])) as RefreshTokenRow[];
  return row ? fromRow(row) : undefined;
}

/** Links a rotated token to its successor (the rotation chain). */
export async function recordReplacement(db: Queryable, tokenId: string, replacedById: string): Promise<void> {
  await db('refresh_tokens').where({ id: tokenId }).update({ replaced_by_id: replacedById });
}
