import type { Knex } from 'knex';

/**
 * The funnels as data (spec: AuthFlowConfig): the steps of the login and registration flows, each with
 * `mandatory` (the user can't disable it) and its position. Steps sharing a `screen_group` are shown on
 * one screen with one Continue button. Seeded with the base funnels that work out of the box.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('auth_flow_steps', (table) => {
    table.uuid('id').primary().defaultTo(db.raw('gen_random_uuid()'));
    table.string('flow', 20).notNullable();
    table.string('step_id', 100).notNullable();
    table.boolean('mandatory').notNullable().defaultTo(true);
    // The spec's `order` (a reserved word in SQL).
    table.integer('position').notNullable();
    table.string('screen_group', 100).nullable();
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    table.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    table.unique(['flow', 'step_id']);
  });
  await db.raw(
    `alter table auth_flow_steps add constraint auth_flow_steps_flow_check check (flow in ('login', 'registration'))`,
  );
  await db('auth_flow_steps').insert([
    { flow: 'login', step_id: 'phone-email', mandatory: true, position: 10 },
    { flow: 'login', step_id: 'password', mandatory: true, position: 20 },
    { flow: 'registration', step_id: 'phone-email', mandatory: true, position: 10 },
    { flow: 'registration', step_id: 'otp-code', mandatory: true, position: 20 },
    { flow: 'registration', step_id: 'password', mandatory: true, position: 30 },
  ]);
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists('auth_flow_steps');
}
