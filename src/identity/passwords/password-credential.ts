import type { Queryable } from '../../db/database.js';

/** The password credential of a user (table user_credentials, type password). */
export async function findPasswordHash(db: Queryable, userId: string): Promise<string | undefined> {
  const row: { secret_hash: string } | undefined = await db('user_credentials')
    .where({ user_id: userId, type: 'password' })
    .first('secret_hash');
  return row?.secret_hash;
}

/**
 * findPasswordHash as a scalar subquery, for a statement that reads it alongside other work (the login
 * counters' claim: src/identity/brute-force/claim-together.ts).
 */
export function passwordHashRead(userId: string): { sql: string; bindings: Record<string, unknown> } {
  return {
    sql: `select secret_hash from user_credentials where user_id = :credentialUser and type = 'password'`,
    bindings: { credentialUser: userId },
  };
}

export async function savePasswordHash(
  db: Queryable,
  userId: string,
  hash: string,
  now: Date,
): Promise<void> {
  await db('user_credentials')
    .insert({ user_id: userId, type: 'password', secret_hash: hash, created_at: now, updated_at: now })
    .onConflict(['user_id', 'type'])
    .merge({ secret_hash: hash, updated_at: now });
}

/**
 * Replaces the hash only if it is still `previousHash` (compare-and-set): re-hashing a password at
 * login must never overwrite a password changed or reset meanwhile. True when replaced.
 */
export async function replacePasswordHash(
  db: Queryable,
  userId: string,
  previousHash: string,
  hash: string,
  now: Date,
): Promise<boolean> {
  const replaced = await db('user_credentials')
    .where({ user_id: userId, type: 'password', secret_hash: previousHash })
    .update({ secret_hash: hash, updated_at: now });
  return replaced > 0;
}
