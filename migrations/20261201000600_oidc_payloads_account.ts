import type { Knex } from 'knex';

// Ending every sign-in of a user (a password change or reset, "sign out everywhere", an administrator's
// revocation) and a logout or consent withdrawal find the engine's Session and Grant rows by account.
export async function up(db: Knex): Promise<void> {
  await db.raw(
    `create index oidc_payloads_model_account_id on oidc_payloads (model, account_id)
     where account_id is not null`,
  );
}

export async function down(db: Knex): Promise<void> {
  await db.raw('drop index if exists oidc_payloads_model_account_id');
}
