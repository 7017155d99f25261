import type { Queryable } from '../../db/database.js';

/**
 * The name given at onboarding, on the user and on the accounts saved on their devices (the login
 * screen's snapshot), together.
 */
export async function saveUserName(
  db: Queryable,
  userId: string,
  name: { givenName: string; familyName: string },
  now: Date,
): Promise<void> {
  await db('users')
    .where({ id: userId })
    .update({ given_name: name.givenName, family_name: name.familyName, updated_at: now });
  await db('saved_accounts')
    .where({ user_id: userId })
    .update({ first_name: name.givenName, last_name: name.familyName });
}

/** The language chosen at onboarding: the pages' and messages' language for this user from now on. */
export async function saveUserLanguage(db: Queryable, userId: string, language: string, now: Date) {
  await db('users').where({ id: userId }).update({ language, updated_at: now });
}
