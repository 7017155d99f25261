import crypto from 'node:crypto';
import type { Database, Queryable } from '../../db/database.js';
import { holdUnrevokedSession } from '../sessions/sessions.js';
import { isUuid } from '../uuid.js';

/**
 * Onboardings in progress (table onboardings): the onboarding cookie is signed, so it can't be forged,
 * but a copy of it would otherwise act for its whole half hour whatever the owner does. Its row is what
 * lets it act: ending the user's sessions deletes their rows (pending-sign-ins.ts), the end of
 * onboarding deletes its own.
 *
 * `sessionId`: the main-auth session the registration started (the service's own pages, no
 * application). The onboarding ends with it (endPendingSignInsStartedBy): a person who registered on a
 * shared computer and logged out, or who threw that session out from another device, must not leave
 * the next holder of the cookie able to set the account's first password. The session is held until
 * the row is written, so a revocation racing this waits and deletes it, or came first and no
 * onboarding starts (its cookie then finds none: "expired"). Answers the onboarding's id.
 */
export async function startOnboardingRecord(
  db: Database,
  onboarding: { userId: string; sessionId?: string | undefined },
  expiresAt: Date,
  now: Date,
): Promise<string> {
  const id = crypto.randomUUID();
  const { userId, sessionId } = onboarding;
  await db.transaction(async (trx) => {
    if (sessionId !== undefined && !(await holdUnrevokedSession(trx, userId, sessionId))) return;
    await trx('onboardings').insert({
      id,
      user_id: userId,
      session_id: sessionId ?? null,
      expires_at: expiresAt,
      created_at: now,
    });
  });
  return id;
}

/** Whether the onboarding `id` of `userId` is still in progress. */
export async function isOnboardingLive(
  db: Queryable,
  id: string,
  userId: string,
  now: Date,
): Promise<boolean> {
  if (!isUuid(id)) return false;
  const row = await db('onboardings')
    .where({ id, user_id: userId })
    .where('expires_at', '>', now)
    .first('id');
  return row !== undefined;
}

/**
 * In the caller's transaction: whether the onboarding `id` of `userId` is still in progress, its row
 * held until the transaction ends. What the caller writes for it (the account's first password) is
 * then written only while it lives: an end racing the caller (a logout, a sign-out everywhere) waits
 * for the commit, or committed first and the caller writes nothing.
 */
export async function holdLiveOnboarding(
  db: Queryable,
  id: string,
  userId: string,
  now: Date,
): Promise<boolean> {
  if (!isUuid(id)) return false;
  const row: unknown = await db('onboardings')
    .where({ id, user_id: userId })
    .where('expires_at', '>', now)
    .forShare()
    .first('id');
  return row !== undefined;
}

/** The end of one onboarding: its cookie, and any copy of it, acts no more. */
export async function endOnboarding(db: Queryable, id: string): Promise<void> {
  if (isUuid(id)) await db('onboardings').where({ id }).delete();
}

/** Ends the onboardings these main-auth sessions started (with them: endPendingSignInsStartedBy). */
export async function endOnboardingsStartedBy(db: Queryable, sessionIds: readonly string[]): Promise<void> {
  await db('onboardings').whereIn('session_id', sessionIds).delete();
}

/** Ends every onboarding of the user (with their sessions). */
export async function endOnboardingsOf(db: Queryable, userId: string): Promise<void> {
  await db('onboardings').where({ user_id: userId }).delete();
}
