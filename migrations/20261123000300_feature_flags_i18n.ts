import type { Knex } from 'knex';

/**
 * The minimal platform storage behind platform.feature_flag.changed and platform.i18n.changed:
 * feature flags with a numeric version, translation packages with a string version.
 */
export async function up(db: Knex): Promise<void> {
  await db.raw(`
    create table platform_feature_flags (
      key varchar(150) primary key,
      -- The service the flag belongs to; null = ecosystem-wide.
      service varchar(100) null,
      description text not null default '',
      enabled boolean not null default false,
      -- Grows by one at every change; published in the event so subscribers can ignore stale ones.
      version integer not null default 1,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    )
  `);

  await db.raw(`
    create table platform_i18n_packages (
      id uuid primary key default gen_random_uuid(),
      locale varchar(35) not null,
      namespace varchar(100) null,
      version varchar(50) not null,
      messages jsonb not null,
      status varchar(10) not null default 'published',
      published_at timestamptz not null,
      revoked_at timestamptz null,
      constraint platform_i18n_packages_status_check check (status in ('published', 'revoked')),
      constraint platform_i18n_packages_version_unique unique nulls not distinct (locale, namespace, version)
    )
  `);

  await db('permissions')
    .insert([
      { key: 'platform.feature-flags.manage', description: 'Manage platform feature flags' },
      { key: 'platform.feature-flags.read', description: 'Read platform feature flags' },
      { key: 'platform.i18n.manage', description: 'Publish and revoke translation packages' },
      { key: 'platform.i18n.read', description: 'Read translation packages' },
    ])
    .onConflict('key')
    .ignore();
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists('platform_i18n_packages');
  await db.schema.dropTableIfExists('platform_feature_flags');
  await db('permissions')
    .whereIn('key', [
      'platform.feature-flags.manage',
      'platform.feature-flags.read',
      'platform.i18n.manage',
      'platform.i18n.read',
    ])
    .delete();
}
