import type { Queryable } from '../../db/database.js';

/**
 * IP throttling (spec: Limits): failed logins from one IP, any accounts, in a 10-minute window. The
 * 20th failure makes the IP wait 1 minute; the 50th blocks it for 30 minutes. The window is fixed
 * (it starts at the first failure), which a 30-minute block always outlasts.
 */
export const ipThrottle = {
  windowSeconds: 10 * 60,
  delay: { failures: 20, lockSeconds: 60 },
  block: { failures: 50, lockSeconds: 30 * 60 },
} as const;

export type IpClaim = { allowed: true; failures: number } | { allowed: false; lockedUntil: Date };

/**
 * Claims one login attempt from `ip`, counted as a failure in advance (see claimAccountAttempt), in ONE
 * upsert: refused while the IP waits or is blocked; a new window when the old one is over.
 */
export async function claimIpAttempt(db: Queryable, ip: string, now: Date): Promise<IpClaim> {
  const windowStart = new Date(now.getTime() - ipThrottle.windowSeconds * 1000);
  const lockAt = (seconds: number) => new Date(now.getTime() + seconds * 1000);
  const { delay, block } = ipThrottle;
  const result = await db.raw(
    `insert into login_ip_throttle as t (ip, window_started_at, failures, locked_until)
     values (?, ?, 1, null)
     on conflict (ip) do update set
       window_started_at = case when t.window_started_at <= ? then excluded.window_started_at
                                else t.window_started_at end,
       failures = case when t.window_started_at <= ? then 1 else t.failures + 1 end,
       locked_until = case
         when t.window_started_at <= ? then null
         when t.failures + 1 >= ? then cast(? as timestamptz)
         when t.failures + 1 = ? then cast(? as timestamptz)
         else null
       end
     where t.locked_until is null or t.locked_until <= excluded.window_started_at
     returning failures`,
    [
      ip,
      now,
      windowStart,
      windowStart,
      windowStart,
      block.failures,
      lockAt(block.lockSeconds),
      delay.failures,
      lockAt(delay.lockSeconds),
    ],
  );
  const row = (result.rows as { failures: number }[])[0];
  if (row) return { allowed: true, failures: row.failures };
  const locked: { locked_until: Date | null } | undefined = await db('login_ip_throttle')
    .where({ ip })
    .first('locked_until');
  if (!locked?.locked_until || locked.locked_until <= now) return { allowed: true, failures: 0 };
  return { allowed: false, lockedUntil: locked.locked_until };
}

/**
 * A successful login takes back its claimed failure; a wait or block that claim had set is lifted
 * (the failures that remain did not reach the threshold).
 */
export async function releaseIpAttempt(db: Queryable, ip: string, now: Date): Promise<void> {
  const windowStart = new Date(now.getTime() - ipThrottle.windowSeconds * 1000);
  await db.raw(
    `update login_ip_throttle set
       failures = greatest(failures - 1, 0),
       locked_until = case when failures = ? or failures >= ? then null else locked_until end
     where ip = ? and window_started_at > ?`,
    [ipThrottle.delay.failures, ipThrottle.block.failures, ip, windowStart],
  );
}

/** The IP's lock now in force if not yet written to the audit log (each lock once). */
export async function takeUnreportedIpLock(
  db: Queryable,
  ip: string,
  now: Date,
): Promise<{ failures: number; lockedUntil: Date } | undefined> {
  const result = await db.raw(
    `update login_ip_throttle set lock_audited_until = locked_until
     where ip = ? and locked_until > ? and lock_audited_until is distinct from locked_until
     returning failures, locked_until`,
    [ip, now],
  );
  const row = (result.rows as { failures: number; locked_until: Date }[])[0];
  return row ? { failures: row.failures, lockedUntil: row.locked_until } : undefined;
}

/** Windows over and locks expired: the hourly cleanup. */
export async function deleteIdleIpThrottles(db: Queryable, now: Date): Promise<number> {
  const windowStart = new Date(now.getTime() - ipThrottle.windowSeconds * 1000);
  return db('login_ip_throttle')
    .where('window_started_at', '<', windowStart)
    .where((query) => query.whereNull('locked_until').orWhere('locked_until', '<', now))
    .delete();
}
