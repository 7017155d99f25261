import type { Knex } from 'knex';

/**
 * A refresh is one insert (the new token) and one update (the old one consumed) of
 * oauth_refresh_tokens, and a row is only ever looked up by its token's hash.
 *
 * - The token's hash becomes the primary key, and the surrogate `id` goes (nothing reads it; a UUID
 *   generated and indexed at every insert): one index less to write at every rotation.
 * - A token is consumed minutes to days after it was written, when its page has long been filled by
 *   newer rows: the update then puts the row's new version on another page, with an entry in every
 *   index. With 15 % of each page kept free (fillfactor 85) it can stay on its page as a heap-only
 *   update, which writes no index entry (it changes no indexed column).
 */
export async function up(db: Knex): Promise<void> {
  await db.raw('alter table oauth_refresh_tokens drop constraint oauth_refresh_tokens_pkey');
  await db.raw('alter table oauth_refresh_tokens drop column id');
  await db.raw('alter table oauth_refresh_tokens drop constraint oauth_refresh_tokens_token_hash_unique');
  await db.raw(
    'alter table oauth_refresh_tokens add constraint oauth_refresh_tokens_pkey primary key (token_hash)',
  );
  await db.raw('alter table oauth_refresh_tokens set (fillfactor = 85)');
}

export async function down(db: Knex): Promise<void> {
  await db.raw('alter table oauth_refresh_tokens reset (fillfactor)');
  await db.raw('alter table oauth_refresh_tokens drop constraint oauth_refresh_tokens_pkey');
  await db.raw(
    'alter table oauth_refresh_tokens add constraint oauth_refresh_tokens_token_hash_unique unique (token_hash)',
  );
  await db.raw('alter table oauth_refresh_tokens add column id uuid not null default gen_random_uuid()');
  await db.raw('alter table oauth_refresh_tokens add constraint oauth_refresh_tokens_pkey primary key (id)');
}
