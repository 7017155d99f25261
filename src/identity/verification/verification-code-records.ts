import type { Knex } from 'knex';
import type { Queryable } from '../../db/database.js';

export const verificationPurposes = ['contact_verify', 'login', 'reset_password', 'sso_otc'] as const;
export type VerificationPurpose = (typeof verificationPurposes)[number];
export type VerificationStatus = 'pending' | 'used' | 'expired';

export interface NewVerificationCode {
  identifier: string;
  purpose: VerificationPurpose;
  codeHash: string;
  userId: string | undefined;
  ip: string | undefined;
  maxAttempts: number;
  expiresAt: Date;
}

/**
 * Stores a new pending code and retires the pending codes it replaces (same identifier, purpose and
 * user): only the latest code works, so requesting more codes gives no extra guesses, and a code asked
 * for by one account never cancels another account's. Run it in a transaction.
 */
export async function replacePendingCode(
  trx: Queryable,
  code: NewVerificationCode,
  now: Date,
): Promise<string> {
  await trx('verification_codes')
    .where({ identifier: code.identifier, purpose: code.purpose, status: 'pending' })
    .whereRaw('user_id is not distinct from ?', [code.userId ?? null])
    .update({ status: 'expired' });
  const [row] = await trx('verification_codes').insert(
    {
      identifier: code.identifier,
      purpose: code.purpose,
      code_hash: code.codeHash,
      user_id: code.userId ?? null,
      ip: code.ip?.slice(0, 64) ?? null,
      max_attempts: code.maxAttempts,
      expires_at: code.expiresAt,
      created_at: now,
    },
    ['id'],
  );
  return (row as { id: string }).id;
}

/**
 * Retires every pending code issued for the user, whatever its purpose: a sign-in code, a reset code,
 * a contact's confirmation code, a one-time SSO code. Their sessions all ended (a password change or
 * reset, "sign out everywhere", an administrator's revocation or disable), and a code sent before must
 * not sign anyone in, set a password or start a sign-in at a client after it. Decoy codes (no user)
 * are not the user's.
 */
export async function retireCodesOf(db: Queryable, userId: string): Promise<void> {
  await db('verification_codes').where({ user_id: userId, status: 'pending' }).update({ status: 'expired' });
}

export async function expireCode(db: Queryable, id: string): Promise<void> {
  await db('verification_codes').where({ id, status: 'pending' }).update({ status: 'expired' });
}

export interface CodeAttempt {
  identifier: string;
  purpose: VerificationPurpose;
  codeHash: string;
  /** Only a code issued for this user counts (contact verification of a signed-in user). */
  userId?: string | undefined;
  /** true: a right code becomes `used`; false: it stays pending (checked, not redeemed). */
  redeem: boolean;
}

export interface CodeAttemptResult {
  id: string;
  matched: boolean;
  status: VerificationStatus;
  attempts: number;
  maxAttempts: number;
  userId: string | null;
}

/**
 * One attempt at the latest pending code, in ONE statement: a wrong code adds 1 to attempts (and the
 * 5th makes the code expired), a right one marks it used when redeeming. The row lock and the
 * re-checked WHERE (status pending, attempts below the limit, not expired) make parallel attempts
 * queue up: no more than max_attempts wrong guesses are ever judged, and a code is used once.
 * Undefined when there is no live pending code.
 */
export async function attemptCode(
  db: Queryable,
  attempt: CodeAttempt,
  now: Date,
): Promise<CodeAttemptResult | undefined> {
  const userFilter = attempt.userId === undefined ? '' : 'and user_id = ?';
  const result = await db.raw(
    `with target as (
       select id from verification_codes
       where identifier = ? and purpose = ? and status = 'pending' ${userFilter}
       order by created_at desc
       limit 1
     )
     update verification_codes as v set
       attempts = v.attempts + (case when v.code_hash = ? then 0 else 1 end),
       status = case
         when v.code_hash = ? then (case when cast(? as boolean) then 'used' else 'pending' end)
         when v.attempts + 1 >= v.max_attempts then 'expired'
         else 'pending'
       end,
       used_at = case when v.code_hash = ? and cast(? as boolean) then cast(? as timestamptz) else v.used_at end
     from target
     where v.id = target.id
       and v.status = 'pending'
       and v.expires_at > cast(? as timestamptz)
       and v.attempts < v.max_attempts
     returning v.id, v.code_hash = ? as matched, v.status, v.attempts, v.max_attempts, v.user_id`,
    [
      attempt.identifier,
      attempt.purpose,
      ...(attempt.userId === undefined ? [] : [attempt.userId]),
      attempt.codeHash,
      attempt.codeHash,
      attempt.redeem,
      attempt.codeHash,
      attempt.redeem,
      now,
      now,
      attempt.codeHash,
    ],
  );
  const row = (result.rows as Record<string, unknown>[])[0];
  if (!row) return undefined;
  return {
    id: row.id as string,
    matched: row.matched === true,
    status: row.status as VerificationStatus,
    attempts: row.attempts as number,
    maxAttempts: row.max_attempts as number,
    userId: (row.user_id as string | null) ?? null,
  };
}

/**
 * Counts a wrong attempt that a rolled-back transaction undid (see confirmVerificationCode): the
 * failed guess must stay counted even when the caller's work is rolled back.
 */
export async function countFailedAttempt(db: Queryable, id: string): Promise<void> {
  await db.raw(
    `update verification_codes set
       attempts = attempts + 1,
       status = case when attempts + 1 >= max_attempts then 'expired' else status end
     where id = ? and status = 'pending'`,
    [id],
  );
}

/**
 * pending → expired for codes whose lifetime is over (the time transition of the spec), all of them or
 * those of one identifier and purpose.
 */
export async function expireOutdatedCodes(
  db: Queryable,
  now: Date,
  of?: { identifier: string; purpose: VerificationPurpose },
): Promise<number> {
  const query = db('verification_codes').where({ status: 'pending' }).where('expires_at', '<=', now);
  if (of) query.where({ identifier: of.identifier, purpose: of.purpose });
  return query.update({ status: 'expired' });
}

/** Codes that ended (used or expired) before `cutoff`, of `query` on verification_codes: the hourly cleanup. */
export function codesEndedBefore(query: Knex.QueryBuilder, cutoff: Date): Knex.QueryBuilder {
  return query.where('expires_at', '<', cutoff);
}

/** Pending codes whose lifetime is over at `now`, of `query` on verification_codes. */
export function lapsedCodes(query: Knex.QueryBuilder, now: Date): Knex.QueryBuilder {
  return query.where({ status: 'pending' }).where('expires_at', '<=', now);
}
