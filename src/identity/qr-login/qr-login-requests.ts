import { randomSecret, sha256 } from '../../crypto/digest.js';
import type { Database, Queryable } from '../../db/database.js';
import { holdUnrevokedSession } from '../sessions/sessions.js';
import type { RequestInfo } from '../../http/request-info.js';

/** How long a QR code can be approved and used. */
export const qrLoginLifetimeSeconds = 120;

export type QrLoginStatus = 'pending' | 'approved' | 'used' | 'expired';

/** The longest user agent kept for a request (the column's length). */
const maxUserAgentLength = 512;

/**
 * A new QR sign-in request: its token (256 random bits) goes into the code; only its hash is kept, with
 * the user agent and IP address of the device that shows the code (`requester`) and the application
 * whose authorization it signs in for (the client of `interactionUid`, the engine's interaction), for
 * the approving device to see who is asking, and for what.
 */
export async function createQrLoginRequest(
  db: Queryable,
  now: Date,
  requester: Pick<RequestInfo, 'ip' | 'userAgent'>,
  interactionUid?: string,
): Promise<{ token: string; expiresAt: Date }> {
  const token = randomSecret(32);
  const expiresAt = new Date(now.getTime() + qrLoginLifetimeSeconds * 1000);
  await db('qr_login_requests').insert({
    token_hash: sha256(token),
    expires_at: expiresAt,
    created_at: now,
    requester_user_agent: requester.userAgent.slice(0, maxUserAgentLength) || null,
    requester_ip: requester.ip || null,
    requester_client_id: interactionUid
      ? db.raw(
          `(select payload->'params'->>'client_id' from oidc_payloads where model = 'Interaction' and id = ?)`,
          [interactionUid],
        )
      : null,
  });
  return { token, expiresAt };
}

/** The device that showed a QR code, as its approver sees it. */
export interface QrLoginRequester {
  status: QrLoginStatus;
  /** Empty when the request recorded none (made before it was kept, or sent without one). */
  userAgent: string;
  ip: string;
  requestedAt: Date;
  /** The application it signs in for (its name, or its id once deleted); undefined: this service. */
  application: string | undefined;
}

/** Who asked for a QR sign-in and its state; undefined when there is no such request. */
export async function qrLoginRequester(
  db: Queryable,
  token: string,
  now: Date,
): Promise<QrLoginRequester | undefined> {
  const row = (await db('qr_login_requests as request')
    .leftJoin('oauth_clients as client', 'client.client_id', 'request.requester_client_id')
    .where({ 'request.token_hash': sha256(token) })
    .first(
      'request.status',
      'request.expires_at',
      'request.created_at',
      'request.requester_user_agent',
      'request.requester_ip',
      'request.requester_client_id',
      'client.name as client_name',
    )) as
    | {
        status: QrLoginStatus;
        expires_at: Date;
        created_at: Date;
        requester_user_agent: string | null;
        requester_ip: string | null;
        requester_client_id: string | null;
        client_name: string | null;
      }
    | undefined;
  if (!row) return undefined;
  return {
    status: statusOf(row, now),
    userAgent: row.requester_user_agent ?? '',
    ip: row.requester_ip ?? '',
    requestedAt: new Date(row.created_at),
    application: row.client_name ?? row.requester_client_id ?? undefined,
  };
}

function statusOf(row: { status: QrLoginStatus; expires_at: Date }, now: Date): QrLoginStatus {
  if (row.status !== 'used' && new Date(row.expires_at) <= now) return 'expired';
  return row.status;
}

/** A QR sign-in request's state (the waiting page's poll); undefined when there is no such request. */
export async function qrLoginStatus(
  db: Queryable,
  token: string,
  now: Date,
): Promise<QrLoginStatus | undefined> {
  return (await qrLoginRequester(db, token, now))?.status;
}

/**
 * A signed-in user approves (one conditional UPDATE: only a pending, live request; once). `authTime` is
 * when the approving session last authenticated its user: the session the code starts keeps it. The
 * approving session (`sessionId`) is recorded: ending it before the waiting device takes the approval
 * ends the approval (pending-sign-ins.ts). 'session_ended' when that session is revoked meanwhile: it
 * is held until the approval is recorded, so a revocation racing it ends the approval too.
 */
export async function approveQrLoginRequest(
  db: Database,
  token: string,
  approver: { userId: string; authTime: Date; sessionId: string | undefined },
  now: Date,
): Promise<'approved' | 'not_pending' | 'session_ended'> {
  return db.transaction(async (trx) => {
    if (!(await holdUnrevokedSession(trx, approver.userId, approver.sessionId))) return 'session_ended';
    const changed = await trx('qr_login_requests')
      .where({ token_hash: sha256(token), status: 'pending' })
      .where('expires_at', '>', now)
      .update({
        status: 'approved',
        user_id: approver.userId,
        auth_time: approver.authTime,
        approved_at: now,
        session_id: approver.sessionId,
      });
    return changed === 1 ? 'approved' : 'not_pending';
  });
}

/**
 * The waiting device takes the approval: approved → used, once; the approving user, when they last
 * authenticated and the approving session (the session started here ends with it), or undefined. An approval made before auth_time was recorded is not taken: its session
 * would pass for a fresh sign-in.
 */
export async function consumeApprovedQrLogin(
  db: Queryable,
  token: string,
  now: Date,
): Promise<{ userId: string; authTime: Date; sessionId: string | undefined } | undefined> {
  const result = await db.raw(
    `update qr_login_requests set status = 'used'
     where token_hash = ? and status = 'approved' and expires_at > cast(? as timestamptz)
       and auth_time is not null
     returning user_id, auth_time, session_id`,
    [sha256(token), now],
  );
  const row = (result.rows as { user_id: string; auth_time: Date; session_id: string | null }[])[0];
  return row
    ? { userId: row.user_id, authTime: new Date(row.auth_time), sessionId: row.session_id ?? undefined }
    : undefined;
}
