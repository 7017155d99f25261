import type { Knex } from 'knex';

/**
 * Brute-force protection that an attacker can't turn against the owner (docs/identity.md):
 * - the lockout ladder counts failures per account AND source (the client IP, or a device the account
 *   signed in on before), so failures from one source lock only that source;
 * - an account-wide bound (100 failures in any hour from unknown sources) stops distributed guessing;
 * - attempts being checked right now are counted apart from failures ("in flight"), so parallel right
 *   passwords are not refused while parallel wrong ones still can't get past a threshold.
 * The per-account table `login_lockouts` is replaced; its locks (at most 30 minutes) are not carried over.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('login_source_lockouts', (table) => {
    // `user:<id>`, or `identifier:<value>` for an identifier no account has (it locks the same way).
    table.string('account', 400).notNullable();
    // `ip:<address>` or `device:<device binding id>`.
    table.string('source', 100).notNullable();
    table.integer('consecutive_failures').notNullable().defaultTo(0);
    // Attempts granted and not yet judged; they stop counting at in_flight_expires_at (a crash mid-check).
    table.integer('in_flight').notNullable().defaultTo(0);
    table.timestamp('in_flight_expires_at', { useTz: true }).nullable();
    table.timestamp('locked_until', { useTz: true }).nullable();
    table.timestamp('updated_at', { useTz: true }).notNullable().index();
    table.primary(['account', 'source']);
  });
  // The times of the account's failures from unknown sources in the last hour (a sliding window: at
  // most 100 entries, the bound), oldest first.
  await db.schema.createTable('login_account_failures', (table) => {
    table.string('account', 400).primary();
    table.specificType('failure_times', 'timestamptz[]').notNullable().defaultTo('{}');
    table.integer('in_flight').notNullable().defaultTo(0);
    table.timestamp('in_flight_expires_at', { useTz: true }).nullable();
    table.timestamp('updated_at', { useTz: true }).notNullable().index();
  });
  await db.schema.alterTable('login_ip_throttle', (table) => {
    table.integer('in_flight').notNullable().defaultTo(0);
    table.timestamp('in_flight_expires_at', { useTz: true }).nullable();
    // A lock is now audited by the failure that sets it.
    table.dropColumn('lock_audited_until');
  });
  await db.schema.dropTable('login_lockouts');
}

export async function down(db: Knex): Promise<void> {
  await db.schema.createTable('login_lockouts', (table) => {
    table.string('subject', 400).primary();
    table.integer('consecutive_failures').notNullable().defaultTo(0);
    table.timestamp('locked_until', { useTz: true }).nullable();
    table.timestamp('lock_audited_until', { useTz: true }).nullable();
    table.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(db.fn.now()).index();
  });
  await db.schema.alterTable('login_ip_throttle', (table) => {
    table.dropColumn('in_flight');
    table.dropColumn('in_flight_expires_at');
    table.timestamp('lock_audited_until', { useTz: true }).nullable();
  });
  await db.schema.dropTableIfExists('login_account_failures');
  await db.schema.dropTableIfExists('login_source_lockouts');
}
