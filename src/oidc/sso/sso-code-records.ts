import { constantTimeEqual } from '../../crypto/digest.js';
import type { Queryable } from '../../db/database.js';
import { hashSsoCode, ssoCodeMaxAttempts } from './sso-code.js';

const purpose = 'sso_otc';

/**
 * Stores a new inbound-SSO code of a user for a client (identifier = the client_id) and retires the
 * user's pending code for that client: one live code per user and client. Run it in a transaction.
 */
export async function storeSsoCode(
  trx: Queryable,
  code: {
    clientId: string;
    userId: string;
    codeHash: string;
    scope: string;
    ip: string;
    expiresAt: Date;
    /** When the user last authenticated (their session's last sign-in or re-authentication). */
    authTime: Date;
    /** The main-auth session that asked for the code: ending it retires the code (pending-sign-ins.ts). */
    sessionId: string;
  },
  now: Date,
): Promise<void> {
  await trx('verification_codes')
    .where({ identifier: code.clientId, purpose, status: 'pending', user_id: code.userId })
    .update({ status: 'expired' });
  await trx('verification_codes').insert({
    identifier: code.clientId,
    purpose,
    code_hash: code.codeHash,
    user_id: code.userId,
    ip: code.ip.slice(0, 64),
    scope: code.scope,
    auth_time: code.authTime,
    session_id: code.sessionId,
    max_attempts: ssoCodeMaxAttempts,
    expires_at: code.expiresAt,
    created_at: now,
  });
}

export interface RedeemedSsoCode {
  userId: string;
  scope: string;
  /** When the user last authenticated before asking for the code: the tokens' auth_time. */
  authTime: Date;
  /** The main-auth session that asked for the code: the grant of the exchange ends with it. */
  sessionId: string | undefined;
}

/**
 * Redeems a code a client presents. The client's live codes are compared with the presented one in
 * constant time (every one of them, no early exit); the match is then claimed by ONE conditional
 * UPDATE (pending → used), which parallel exchanges of the same code queue on: exactly one gets the
 * row. A code matching none counts one attempt against every live code of the client, atomically, and
 * a code at its limit expires. Undefined when nothing was redeemed.
 */
export async function redeemSsoCode(
  db: Queryable,
  presented: { clientId: string; code: string },
  now: Date,
): Promise<RedeemedSsoCode | undefined> {
  const presentedHash = hashSsoCode(presented.code);
  const live = (await db('verification_codes')
    .select('id', 'code_hash')
    .where({ identifier: presented.clientId, purpose, status: 'pending' })
    .where('expires_at', '>', now)
    .whereRaw('attempts < max_attempts')) as { id: string; code_hash: string }[];
  let matchedId: string | undefined;
  for (const row of live) {
    if (constantTimeEqual(row.code_hash, presentedHash)) matchedId ??= row.id;
  }
  if (matchedId === undefined) {
    await countWrongCode(db, presented.clientId, now);
    return undefined;
  }
  // A code made before auth_time was recorded is refused: its tokens would pass for a fresh sign-in.
  const claimed = await db.raw(
    `update verification_codes set status = 'used', used_at = cast(? as timestamptz)
     where id = ? and status = 'pending' and expires_at > cast(? as timestamptz) and attempts < max_attempts
       and auth_time is not null
     returning user_id, scope, auth_time, session_id`,
    [now, matchedId, now],
  );
  const row = (
    claimed.rows as { user_id: string; scope: string | null; auth_time: Date; session_id: string | null }[]
  )[0];
  if (!row) return undefined;
  return {
    userId: row.user_id,
    scope: row.scope ?? 'openid',
    authTime: new Date(row.auth_time),
    sessionId: row.session_id ?? undefined,
  };
}

async function countWrongCode(db: Queryable, clientId: string, now: Date): Promise<void> {
  await db.raw(
    `update verification_codes set
       attempts = attempts + 1,
       status = case when attempts + 1 >= max_attempts then 'expired' else status end
     where identifier = ? and purpose = ? and status = 'pending' and expires_at > cast(? as timestamptz)`,
    [clientId, purpose, now],
  );
}
