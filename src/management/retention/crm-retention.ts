import type { CleanupTask } from '../../jobs/cleanup-expired-records.js';

/** Financial events and facts are kept this long (spec: Lifetimes, financial event retention). */
export const crmRetentionYears = 7;

/** The instant before which crm data may go: 7 calendar years before `now`. */
export function crmRetentionCutoff(now: Date): Date {
  const cutoff = new Date(now);
  cutoff.setUTCFullYear(cutoff.getUTCFullYear() - crmRetentionYears);
  return cutoff;
}

/**
 * The hourly cleanup's part for crm data: only what is older than 7 years goes, by the time of the
 * change it records (events: occurredAt; records: the occurredAt of their kept version; totals: their
 * day; dead letters: last seen; snapshots: fetched). Nothing younger is ever deleted by any task.
 */
export const crmRetentionTasks: CleanupTask[] = [
  {
    name: 'crm_events older than 7 years',
    run: (db, now) => db('crm_events').where('occurred_at', '<', crmRetentionCutoff(now)).delete(),
  },
  {
    name: 'crm_records older than 7 years',
    run: (db, now) => db('crm_records').where('occurred_at', '<', crmRetentionCutoff(now)).delete(),
  },
  {
    name: 'crm_daily_totals older than 7 years',
    run: (db, now) =>
      db('crm_daily_totals').where('day', '<', crmRetentionCutoff(now).toISOString().slice(0, 10)).delete(),
  },
  {
    name: 'crm_dead_letters older than 7 years',
    run: (db, now) => db('crm_dead_letters').where('last_seen_at', '<', crmRetentionCutoff(now)).delete(),
  },
  {
    name: 'crm_snapshots older than 7 years',
    run: (db, now) => db('crm_snapshots').where('fetched_at', '<', crmRetentionCutoff(now)).delete(),
  },
];
