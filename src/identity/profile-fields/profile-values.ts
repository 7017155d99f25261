import type { Queryable } from '../../db/database.js';

/** Stores a user's profile answers (run in the transaction that creates the account). */
export async function saveProfileValues(
  trx: Queryable,
  userId: string,
  values: Record<string, string>,
  now: Date,
): Promise<void> {
  const rows = Object.entries(values).map(([fieldKey, value]) => ({
    user_id: userId,
    field_key: fieldKey,
    value,
    updated_at: now,
  }));
  if (rows.length === 0) return;
  await trx('user_field_values')
    .insert(rows)
    .onConflict(['user_id', 'field_key'])
    .merge(['value', 'updated_at']);
}

export async function readProfileValues(db: Queryable, userId: string): Promise<Record<string, string>> {
  const rows = (await db('user_field_values').where({ user_id: userId }).select('field_key', 'value')) as {
    field_key: string;
    value: string;
  }[];
  return Object.fromEntries(rows.map((row) => [row.field_key, row.value]));
}
