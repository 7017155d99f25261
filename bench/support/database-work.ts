/**
 * What PostgreSQL did for a bench's database over a run: committed transactions and, per table, scans
 * (sequential + index: roughly the statements that read it) and rows written, from the statistics views
 * (pg_stat_statements would need a server setting). Divided by the requests of the run, it shows work
 * done per request: a query too many, a write that could be skipped.
 */
import knex from 'knex';

export interface WorkCounters {
  transactions: number;
  tables: Map<string, { scans: number; rowsWritten: number }>;
}

/**
 * The counters of `databaseUrl`'s database now, as far as its backends have reported them: call after
 * a pause (`settledWorkCounters`).
 */
export async function workCounters(databaseUrl: string): Promise<WorkCounters> {
  const database = knex({ client: 'pg', connection: databaseUrl, pool: { min: 0, max: 1 } });
  try {
    const { rows: totals } = await database.raw<{ rows: { xact_commit: string }[] }>(
      'select xact_commit from pg_stat_database where datname = current_database()',
    );
    const { rows } = await database.raw<{ rows: { relname: string; scans: string; written: string }[] }>(
      `select relname, coalesce(seq_scan, 0) + coalesce(idx_scan, 0) as scans,
              n_tup_ins + n_tup_upd + n_tup_del as written
         from pg_stat_user_tables`,
    );
    return {
      transactions: Number(totals[0]?.xact_commit ?? 0),
      tables: new Map(
        rows.map((row) => [row.relname, { scans: Number(row.scans), rowsWritten: Number(row.written) }]),
      ),
    };
  } finally {
    await database.destroy();
  }
}

/**
 * The counters after the backends have had time to report. PostgreSQL 15 flushes a busy backend's at
 * most every second, and an idle one's only after 10 s (PGSTAT_IDLE_INTERVAL): read after 2 s, a
 * scenario's work showed up in the next one's (rate_limits 2.94 writes a refresh after introspection,
 * 1.13 measured alone).
 */
export async function settledWorkCounters(databaseUrl: string): Promise<WorkCounters> {
  await new Promise((resolve) => setTimeout(resolve, 11_000));
  return workCounters(databaseUrl);
}

/** Per request: transactions, and the tables read or written, busiest first. */
export function workPerRequest(before: WorkCounters, after: WorkCounters, requests: number) {
  const per = (value: number) => Number((value / Math.max(1, requests)).toFixed(2));
  const tables = [...after.tables]
    .map(([name, counts]) => {
      const earlier = before.tables.get(name) ?? { scans: 0, rowsWritten: 0 };
      return {
        name,
        scans: per(counts.scans - earlier.scans),
        rowsWritten: per(counts.rowsWritten - earlier.rowsWritten),
      };
    })
    .filter((table) => table.scans > 0 || table.rowsWritten > 0)
    .sort((a, b) => b.scans + b.rowsWritten - (a.scans + a.rowsWritten));
  return {
    transactions: per(after.transactions - before.transactions),
    scans: Number(tables.reduce((sum, table) => sum + table.scans, 0).toFixed(2)),
    rowsWritten: Number(tables.reduce((sum, table) => sum + table.rowsWritten, 0).toFixed(2)),
    tables: Object.fromEntries(
      tables.map((table) => [table.name, `${table.scans} read, ${table.rowsWritten} written`]),
    ),
  };
}

/** One line: "2.01 transactions, 3.02 scans, 2 rows written (oauth_refresh_tokens 2 read, 2 written; ...)". */
export function describeWork(work: ReturnType<typeof workPerRequest>): string {
  const tables = Object.entries(work.tables)
    .map(([name, counts]) => `${name} ${counts}`)
    .join('; ');
  return `${work.transactions} transactions, ${work.scans} scans, ${work.rowsWritten} rows written (${tables})`;
}
