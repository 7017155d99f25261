import type { Knex } from 'knex';

/**
 * Brute-force protection (spec: Limits): the account lockout ladder and the per-IP throttle. Each
 * counter is changed by one atomic upsert, so parallel attempts can't slip past a threshold.
 */
export async function up(db: Knex): Promise<void> {
  // Consecutive failed logins of an account (`user:<id>`), or of an identifier no account has
  // (`identifier:<value>`, so unknown identifiers lock exactly like real ones).
  await db.schema.createTable('login_lockouts', (table) => {
    table.string('subject', 400).primary();
    table.integer('consecutive_failures').notNullable().defaultTo(0);
    table.timestamp('locked_until', { useTz: true }).nullable();
    // The lock already written to the audit log (each lock is audited once).
    table.timestamp('lock_audited_until', { useTz: true }).nullable();
    table.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(db.fn.now()).index();
  });
  // Failed logins from one IP in a fixed 10-minute window.
  await db.schema.createTable('login_ip_throttle', (table) => {
    table.string('ip', 64).primary();
    table.timestamp('window_started_at', { useTz: true }).notNullable();
    table.integer('failures').notNullable().defaultTo(0);
    table.timestamp('locked_until', { useTz: true }).nullable();
    table.timestamp('lock_audited_until', { useTz: true }).nullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists('login_ip_throttle');
  await db.schema.dropTableIfExists('login_lockouts');
}
