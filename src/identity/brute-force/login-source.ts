import { sha256 } from '../../crypto/digest.js';
import type { Queryable } from '../../db/database.js';

/**
 * Where a login attempt comes from, for the lockout ladder: the signed-in session it is made in (a
 * password re-checked inside a session, e.g. to change it), else a device the account has signed in
 * on before (its device-binding cookie names a live binding on which the account is saved and not
 * removed by the user), else the client's address block (RequestInfo.addressBlock: an IPv6 client's
 * /64). Sessions and devices are the account's own: signing in to one's own account on a device makes
 * it known for that account only.
 *
 * A session that another one started (a QR approval, an inbound SSO login from its grant:
 * `started_by_session_id`) counts on the ladder of the first session of that line. Each session had a
 * ladder of its own, and a stolen token approves a QR sign-in of the thief's machine at will: five more
 * password guesses at /auth/reauthenticate with every session it started, without end.
 */
export type LoginSource = { kind: 'session' | 'device' | 'ip'; key: string };

const nobody = '00000000-0000-0000-0000-000000000000';

export async function loginSourceOf(
  db: Queryable,
  attempt: {
    userId: string | undefined;
    addressBlock: string;
    deviceCookie?: string | undefined;
    sessionId?: string | undefined;
  },
): Promise<LoginSource> {
  if (attempt.userId && attempt.sessionId) {
    return { kind: 'session', key: `session:${await firstSessionOf(db, attempt.sessionId)}` };
  }
  if (attempt.deviceCookie) {
    // Looked up for an identifier no account has too: the same work, so the time tells nothing.
    const device = await findKnownDevice(db, attempt.userId ?? nobody, attempt.deviceCookie);
    if (device && attempt.userId) return { kind: 'device', key: `device:${device}` };
  }
  return { kind: 'ip', key: `ip:${attempt.addressBlock}` };
}

/**
 * The device binding the cookie names, if the user signed in on it before with a proof of their own;
 * else undefined. A sign-in another session vouched for (a QR approval) saves the account on the
 * device without making it known (saved_accounts.proven_here, bind-device.ts).
 */
async function findKnownDevice(
  db: Queryable,
  userId: string,
  deviceCookie: string,
): Promise<string | undefined> {
  const row: { id: string } | undefined = await db('device_bindings as d')
    .join('saved_accounts as s', 's.device_binding_id', 'd.id')
    .where({ 'd.secret_hash': sha256(deviceCookie), 's.user_id': userId })
    .whereNull('d.revoked_at')
    .whereNull('s.revoked_at')
    // Not a device only ever signed in on by another session's approval (a QR code): a stolen token
    // approves any browser of the thief's, and each would be a fresh "own" source for guesses.
    .where('s.proven_here', true)
    .first('d.id');
  return row?.id;
}

/** Sessions followed up `started_by_session_id` at most this far (a line is a few sessions long). */
const maxLineLength = 64;

/**
 * The first session of the line `sessionId` belongs to: itself, unless another session started it
 * (then that one's first). A starter already deleted (expired and cleaned up) ends the line where it
 * was.
 */
async function firstSessionOf(db: Queryable, sessionId: string): Promise<string> {
  const result = await db.raw(
    `with recursive line(id, started_by, depth) as (
       select id, started_by_session_id, 0 from sessions where id = ?
       union all
       select s.id, s.started_by_session_id, line.depth + 1
         from sessions as s join line on s.id = line.started_by
        where line.depth < ?
     )
     select id from line order by depth desc limit 1`,
    [sessionId, maxLineLength],
  );
  const row = (result.rows as { id: string }[])[0];
  return row?.id ?? sessionId;
}
