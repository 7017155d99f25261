import crypto from 'node:crypto';
import type { Queryable } from '../../db/database.js';
import { isUuid } from '../uuid.js';

/**
 * Onboardings in progress (table onboardings): the onboarding cookie is signed, so it can't be forged,
 * but a copy of it would otherwise act for its whole half hour whatever the owner does. Its row is what
 * lets it act: ending the user's sessions deletes their rows (pending-sign-ins.ts), the end of
 * onboarding deletes its own.
 */
export async function startOnboardingRecord(
  db: Queryable,
  userId: string,
  expiresAt: Date,
  now: Date,
): Promise<string> {
  const id = crypto.randomUUID();
  await db('onboardings').insert({ id, user_id: userId, expires_at: expiresAt, created_at: now });
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

/** The end of one onboarding: its cookie, and any copy of it, acts no more. */
export async function endOnboarding(db: Queryable, id: string): Promise<void> {
  if (isUuid(id)) await db('onboardings').where({ id }).delete();
}

/** Ends every onboarding of the user (with their sessions). */
export async function endOnboardingsOf(db: Queryable, userId: string): Promise<void> {
  await db('onboardings').where({ user_id: userId }).delete();
}
