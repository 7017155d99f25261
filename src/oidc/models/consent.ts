import type { Queryable } from '../../db/database.js';

/** A user's consent to a client (table consents): one row per (user, client), scopes only ever added. */
export interface Consent {
  userId: string;
  clientId: string;
  scopes: string[];
  grantedAt: Date;
}

export async function findConsent(
  db: Queryable,
  userId: string,
  clientId: string,
): Promise<Consent | undefined> {
  const row: { scopes: string[]; granted_at: Date } | undefined = await db('consents')
    .where({ user_id: userId, client_id: clientId })
    .first('scopes', 'granted_at');
  return row && { userId, clientId, scopes: row.scopes, grantedAt: row.granted_at };
}

/**
 * Whether the user's consent to the client is still there, waiting for a withdrawal in flight (its row
 * lock) to commit or roll back: the check a grant made from the consent takes once saved
 * (load-existing-grant.ts).
 */
export async function consentStillGiven(db: Queryable, userId: string, clientId: string): Promise<boolean> {
  const row: unknown = await db('consents')
    .where({ user_id: userId, client_id: clientId })
    .forShare()
    .first('user_id');
  return row !== undefined;
}

/** Records consent to `scopes`, merged with what the user consented to before. */
export async function saveConsent(
  db: Queryable,
  userId: string,
  clientId: string,
  scopes: string[],
  now: Date,
): Promise<void> {
  await db('consents')
    .insert({ user_id: userId, client_id: clientId, scopes, granted_at: now })
    .onConflict(['user_id', 'client_id'])
    .merge({
      scopes: db.raw('array(select distinct unnest(consents.scopes || excluded.scopes) order by 1)'),
      granted_at: now,
    });
}

/** Deletes a user's consent to a client; false when there was none. */
export async function deleteConsent(db: Queryable, userId: string, clientId: string): Promise<boolean> {
  return (await db('consents').where({ user_id: userId, client_id: clientId }).delete()) > 0;
}
