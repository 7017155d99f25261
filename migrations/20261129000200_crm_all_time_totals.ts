import type { Knex } from 'knex';

/**
 * All-time sums of the crm daily totals (the balance is all-time): changed in the same statement batch
 * as the daily totals, so the balance reads a few rows instead of summing every day of seven years.
 * Never pruned: crm's balance counts everything ever recorded, and so does this.
 */
export async function up(db: Knex): Promise<void> {
  await db.raw(`
    create table crm_all_time_totals (
      metric varchar(40) not null,
      dimension varchar(120) not null default '',
      currency varchar(3) not null default '',
      count bigint not null,
      amount_minor bigint not null,
      primary key (metric, dimension, currency)
    )
  `);
  await db.raw(`
    insert into crm_all_time_totals (metric, dimension, currency, count, amount_minor)
    select metric, dimension, currency, sum(count), sum(amount_minor)
      from crm_daily_totals group by metric, dimension, currency
  `);
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTableIfExists('crm_all_time_totals');
}
