import type { Database, Queryable } from '../../db/database.js';
import type { ApiError } from '../../http/api-error.js';
import { isUuid } from '../uuid.js';
import type { AvatarImage } from './avatar-image.js';

/** The public address of an avatar, as the `picture` claim and saved accounts carry it. */
export const avatarPath = (id: string) => `/avatars/${id}`;

/**
 * The image crosses the database connection as base64 text, encoded and decoded by the database
 * (`encode`/`decode`) and by Node's native codec. Sent as bytea, PGlite (the embedded database, which
 * runs on the process's one thread) converts each byte to and from hex in JavaScript: a 2 MB avatar
 * took ~2 s to store and ~0.5 s to read, during which nothing else in the process ran, so anyone
 * fetching a public avatar address in a loop stalled every other request. As base64: tens of ms.
 */
const imageAsBase64 = (db: Queryable) => db.raw(`encode(image, 'base64') as image`);
const imageFromBase64 = (db: Queryable, bytes: Buffer) =>
  db.raw(`decode(?, 'base64')`, [bytes.toString('base64')]);

/**
 * Stores the user's new avatar and points `users.picture` (and the user's saved accounts) at it, in one
 * transaction; the previous avatar is deleted. Each upload gets a new id, so an address never changes
 * content and may be cached for ever. `holdStanding`: what lets the request act for the user (the
 * onboarding of its cookie), looked at in that transaction after the user's row is held, and held
 * until the commit; when it has ended, nothing is stored and its error is thrown.
 */
export async function saveAvatar(
  db: Database,
  userId: string,
  image: AvatarImage,
  issuer: string,
  now: Date,
  holdStanding?: (trx: Queryable) => Promise<ApiError | undefined>,
): Promise<string> {
  return db.transaction(async (trx) => {
    // The user's row first, as a sign-out everywhere takes it before it ends the onboardings.
    await trx('users').where({ id: userId }).forNoKeyUpdate().first('id');
    const ended = await holdStanding?.(trx);
    if (ended) throw ended;
    await trx('user_avatars').where({ user_id: userId }).delete();
    const [row] = await trx('user_avatars').insert(
      {
        user_id: userId,
        content_type: image.contentType,
        image: imageFromBase64(trx, image.bytes),
        created_at: now,
      },
      ['id'],
    );
    const picture = `${issuer.replace(/\/$/, '')}${avatarPath((row as { id: string }).id)}`;
    await trx('users').where({ id: userId }).update({ picture, updated_at: now });
    await trx('saved_accounts').where({ user_id: userId }).update({ avatar_url: picture });
    return picture;
  });
}

export async function findAvatar(
  db: Queryable,
  id: string,
): Promise<{ contentType: string; image: Buffer } | undefined> {
  if (!isUuid(id)) return undefined;
  const row: { content_type: string; image: string } | undefined = await db('user_avatars')
    .where({ id })
    .first('content_type', imageAsBase64(db));
  // Node's decoder skips the line breaks PostgreSQL puts in base64 every 76 characters.
  return row && { contentType: row.content_type, image: Buffer.from(row.image, 'base64') };
}
