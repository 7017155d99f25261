import type { Database, Queryable } from '../../db/database.js';
import { isUuid } from '../uuid.js';
import type { AvatarImage } from './avatar-image.js';

/** The public address of an avatar, as the `picture` claim and saved accounts carry it. */
export const avatarPath = (id: string) => `/avatars/${id}`;

/**
 * Stores the user's new avatar and points `users.picture` (and the user's saved accounts) at it, in one
 * transaction; the previous avatar is deleted. Each upload gets a new id, so an address never changes
 * content and may be cached for ever.
 */
export async function saveAvatar(
  db: Database,
  userId: string,
  image: AvatarImage,
  issuer: string,
  now: Date,
): Promise<string> {
  return db.transaction(async (trx) => {
    await trx('user_avatars').where({ user_id: userId }).delete();
    const [row] = await trx('user_avatars').insert(
      { user_id: userId, content_type: image.contentType, image: image.bytes, created_at: now },
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
  const row: { content_type: string; image: Buffer | Uint8Array } | undefined = await db('user_avatars')
    .where({ id })
    .first('content_type', 'image');
  return row && { contentType: row.content_type, image: Buffer.from(row.image) };
}
