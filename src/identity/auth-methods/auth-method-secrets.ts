import type { Queryable } from '../../db/database.js';
import type { SecretBox } from './secret-box.js';

/** Encrypted secrets of auth methods (table auth_method_secrets); a method's settings keep the id. */
export async function storeMethodSecret(
  db: Queryable,
  box: SecretBox,
  userId: string,
  secret: string,
  now: Date,
): Promise<string> {
  const [row] = await db('auth_method_secrets').insert(
    { user_id: userId, ciphertext: box.seal(secret), created_at: now },
    ['id'],
  );
  return (row as { id: string }).id;
}

export async function readMethodSecret(
  db: Queryable,
  box: SecretBox,
  userId: string,
  secretId: string,
): Promise<string | undefined> {
  const row: { ciphertext: string } | undefined = await db('auth_method_secrets')
    .where({ id: secretId, user_id: userId })
    .first('ciphertext');
  return row ? box.open(row.ciphertext) : undefined;
}

export async function deleteMethodSecret(db: Queryable, secretId: string): Promise<void> {
  await db('auth_method_secrets').where({ id: secretId }).delete();
}
