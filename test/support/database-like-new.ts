import { migrationsTable } from '../../src/db/migrate.js';

/** What making a test database like new needs of it: its rows, and statements run as one script. */
export interface ScriptRunner {
  rows<Row>(sql: string): Promise<Row[]>;
  run(script: string): Promise<void>;
}

/** Where a database keeps a copy of the rows its migrations seed, to put them back. */
const pristineSchema = 'test_pristine_rows';

/**
 * Prepares a freshly migrated database to be used by one test file after another: keeps a copy of
 * the rows migrations seed, and returns the script that empties every table and puts them back. Foreign
 * keys are not checked while the rows go back (session_replication_role): they were valid.
 */
export async function prepareLikeNew(database: ScriptRunner): Promise<string> {
  const tables = (
    await database.rows<{ table: string }>(
      `select format('%I.%I', schemaname, tablename) as table from pg_tables
        where schemaname = 'public' and tablename not like '${migrationsTable}%'`,
    )
  ).map((row) => row.table);
  const sequences = (
    await database.rows<{ sequence: string }>(
      `select format('%I.%I', schemaname, sequencename) as sequence from pg_sequences
        where schemaname = 'public' and sequencename not like '${migrationsTable}%'`,
    )
  ).map((row) => row.sequence);
  const seeded: string[] = [];
  for (const table of tables) {
    if ((await database.rows(`select from ${table} limit 1`)).length > 0) seeded.push(table);
  }
  await database.run(
    `create schema ${pristineSchema};` +
      seeded.map((table, index) => `create table ${pristineSchema}.t${index} as table ${table};`).join(''),
  );
  // DELETE, not TRUNCATE: on PostgreSQL, truncating the ~55 tables (new files for each and its indexes)
  // takes 0.3 s, emptying these few rows a few milliseconds.
  return (
    'set session_replication_role = replica;' +
    tables.map((table) => `delete from ${table};`).join('') +
    sequences.map((sequence) => `alter sequence ${sequence} restart;`).join('') +
    seeded.map((table, index) => `insert into ${table} select * from ${pristineSchema}.t${index};`).join('') +
    'set session_replication_role = origin;'
  );
}

/**
 * The relations and columns of every schema but the system's, and the migrations recorded: a test that
 * changed any of them (a table renamed or created, a migration rolled back) leaves a database that is
 * not given to the next file.
 */
export async function schemaOf(database: ScriptRunner): Promise<string> {
  const [row] = await database.rows<{ schema: string }>(
    `select (select string_agg(format('%s.%s:%s:%s', n.nspname, c.relname, c.relkind,
                   (select count(*) from pg_attribute a where a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped)),
                   ',' order by n.nspname, c.relname)
               from pg_class c join pg_namespace n on n.oid = c.relnamespace
              where n.nspname not in ('pg_catalog', 'information_schema') and n.nspname not like 'pg_%')
            || '|' || (select count(*) from ${migrationsTable}) as schema`,
  );
  return row!.schema;
}
