import type { Queryable } from '../../db/database.js';

/**
 * Provider accounts a user unlinked. The owner unlinks one because someone else holds it; a provider
 * that vouches for the account's email would otherwise link it back at that person's next sign-in
 * through it (the automatic link, docs/federation.md rule 2), with a session, undoing the unlink. Such a
 * subject is linked again only deliberately: by someone who signed in to the account (the confirmed
 * link) or from its security settings.
 */

export async function recordUnlinkedSubject(
  db: Queryable,
  link: { userId: string; provider: string; subject: string },
  now: Date,
): Promise<void> {
  await db('unlinked_provider_subjects')
    .insert({
      user_id: link.userId,
      provider: link.provider,
      external_subject: link.subject,
      unlinked_at: now,
    })
    .onConflict(['user_id', 'provider', 'external_subject'])
    .merge(['unlinked_at']);
}

/** Whether the user unlinked this provider account (and has not linked it again deliberately since). */
export async function wasUnlinkedBy(
  db: Queryable,
  link: { userId: string; provider: string; subject: string },
): Promise<boolean> {
  const row: unknown = await db('unlinked_provider_subjects')
    .where({ user_id: link.userId, provider: link.provider, external_subject: link.subject })
    .first('user_id');
  return row !== undefined;
}

/** A deliberate link of the subject: the unlink is forgotten. */
export async function forgetUnlinkedSubject(
  db: Queryable,
  link: { userId: string; provider: string; subject: string },
): Promise<void> {
  await db('unlinked_provider_subjects')
    .where({ user_id: link.userId, provider: link.provider, external_subject: link.subject })
    .delete();
}
