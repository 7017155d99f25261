import type { Knex } from 'knex';
import type { Queryable } from '../../db/database.js';
import { chunksOf } from '../../db/statement-chunks.js';
import { isUuid } from '../uuid.js';
import { announceSessionsEnded } from './session-ends.js';
import { idleCutoff, type SessionPolicy } from './session-policy.js';
import { defaults } from '../../defaults.js';
import { endOidcSignInsOf } from '../../oidc/models/user-sign-ins.js';
import { endEngineSignInsStartedBy } from '../../oidc/models/engine-session-starters.js';
import { revokeGrantsStartedBy } from '../../oidc/models/session-started-grants.js';
import { endPendingSignInsOf, endPendingSignInsStartedBy } from './pending-sign-ins.js';
import { unlistAccountFromDevices } from './saved-accounts.js';

/** Lifetime of a main-auth session and of its refresh tokens (spec: Limits). */
export const sessionLifetimeMs = defaults.lifetimes.mainAuthSession * 1000;

/** A main-auth session: one per successful login (table sessions). */
export interface Session {
  id: string;
  userId: string;
  refreshTokenId: string | null;
  deviceBindingId: string | null;
  userAgent: string;
  ipAddress: string;
  browserName: string;
  authMethod: string;
  /** The login's time (the access tokens' auth_time). */
  authTime: Date;
  /** The last time the user proved who they are in this session: the login or a re-authentication. */
  lastAuthenticatedAt: Date;
  lastActivityAt: Date;
  expiresAt: Date;
  isRevoked: boolean;
  createdAt: Date;
}

interface SessionRow {
  id: string;
  user_id: string;
  refresh_token_id: string | null;
  device_binding_id: string | null;
  user_agent: string;
  ip_address: string;
  browser_name: string;
  auth_method: string;
  auth_time: Date;
  last_authenticated_at: Date;
  last_activity_at: Date;
  expires_at: Date;
  is_revoked: boolean;
  created_at: Date;
}

function fromRow(row: SessionRow): Session {
  return {
    id: row.id,
    userId: row.user_id,
    refreshTokenId: row.refresh_token_id,
    deviceBindingId: row.device_binding_id,
    userAgent: row.user_agent,
    ipAddress: row.ip_address,
    browserName: row.browser_name,
    authMethod: row.auth_method,
    authTime: row.auth_time,
    lastAuthenticatedAt: row.last_authenticated_at,
    lastActivityAt: row.last_activity_at,
    expiresAt: row.expires_at,
    isRevoked: row.is_revoked,
    createdAt: row.created_at,
  };
}

export interface NewSession {
  /** Chosen by the caller so the session and its first refresh token can name each other in one insert each. */
  id: string;
  refreshTokenId: string;
  userId: string;
  deviceBindingId?: string | undefined;
  userAgent: string;
  ipAddress: string;
  browserName: string;
  authMethod: string;
  /**
   * When the user authenticated, if before the session starts (inbound SSO: the access token's
   * auth_time); default now. The session's auth_time and last re-authentication both start from it.
   */
  authenticatedAt?: Date | undefined;
  /** The session that vouched for this one (a QR approval): ending it ends this one (revokeSessionsWhere). */
  startedBySessionId?: string | undefined;
  /**
   * The grant whose access token an inbound login was made from: revoking it ends this session
   * (endSessionsFromGrants).
   */
  fromGrantId?: string | undefined;
}

/**
 * The insert of a new session, not run yet, and the session it creates (every column is known here):
 * a sign-in runs it in the statement that stores the session's first refresh token (start-session.ts).
 */
export function sessionInsert(
  db: Queryable,
  session: NewSession,
  now: Date,
): { insert: Knex.QueryBuilder; session: Session } {
  const authenticatedAt =
    session.authenticatedAt && session.authenticatedAt < now ? session.authenticatedAt : now;
  const row: SessionRow = {
    id: session.id,
    refresh_token_id: session.refreshTokenId,
    user_id: session.userId,
    device_binding_id: session.deviceBindingId ?? null,
    user_agent: session.userAgent,
    ip_address: session.ipAddress,
    browser_name: session.browserName,
    auth_method: session.authMethod,
    auth_time: authenticatedAt,
    last_authenticated_at: authenticatedAt,
    last_activity_at: now,
    expires_at: new Date(now.getTime() + sessionLifetimeMs),
    is_revoked: false,
    created_at: now,
  };
  const insert = db('sessions').insert({
    ...row,
    started_by_session_id: session.startedBySessionId ?? null,
    from_grant_id: session.fromGrantId ?? null,
  });
  return { insert, session: fromRow(row) };
}

export async function insertSession(db: Queryable, session: NewSession, now: Date): Promise<Session> {
  const { insert, session: created } = sessionInsert(db, session, now);
  await insert;
  return created;
}

/**
 * The session if it is live: not revoked, not expired, not idle longer than the policy allows.
 * `lock`: in a transaction, keeps the row from being revoked until it commits (a revocation racing the
 * caller then waits for it, or has committed and the session is not found).
 */
export async function findActiveSession(
  db: Queryable,
  sessionId: string,
  policy: SessionPolicy,
  now: Date,
  /**
   * Locks the row until the transaction ends: `share` against a revocation, `update` too against
   * another writer of the row (a refresh, which then updates it: two shared locks would deadlock).
   */
  options: { lock?: 'share' | 'update' } = {},
): Promise<Session | undefined> {
  if (!isUuid(sessionId)) return undefined;
  const query = db('sessions')
    .where({ id: sessionId, is_revoked: false })
    .where('expires_at', '>', now)
    .where('last_activity_at', '>', idleCutoff(policy, now));
  const locked =
    options.lock === 'share' ? query.forShare() : options.lock === 'update' ? query.forNoKeyUpdate() : query;
  const row: SessionRow | undefined = await locked.first();
  return row ? fromRow(row) : undefined;
}

/**
 * The most sessions GET /security/sessions lists. A user starts sessions at will (a sign-in each, from
 * address after address, each with a User-Agent of up to 512 characters), and the list named every
 * one: 30,000 of them made an answer of 23 MB that took the service's thread about a second and a half
 * to build, at every request, and a client holding many such answers unread kept them all in memory.
 * "Sign out everywhere" ends those not listed.
 */
export const listedSessionsAtMost = 100;

/**
 * The user's active sessions, most recently active first: at most listedSessionsAtMost, `currentId`'s
 * among them when it is active.
 */
export async function listActiveSessions(
  db: Queryable,
  userId: string,
  policy: SessionPolicy,
  now: Date,
  currentId?: string,
): Promise<Session[]> {
  const active = () =>
    db('sessions')
      .where({ user_id: userId, is_revoked: false })
      .where('expires_at', '>', now)
      .where('last_activity_at', '>', idleCutoff(policy, now));
  const rows: SessionRow[] = await active()
    .orderBy([{ column: 'last_activity_at', order: 'desc' }, { column: 'id' }])
    .limit(listedSessionsAtMost);
  if (currentId !== undefined && isUuid(currentId) && !rows.some((row) => row.id === currentId)) {
    const current: SessionRow | undefined = await active().where({ id: currentId }).first();
    if (current && rows.length === listedSessionsAtMost) rows.splice(-1, 1, current);
    else if (current) rows.push(current);
  }
  return rows.map(fromRow);
}

/** Records a refresh: the session's current token and its last activity. */
export async function touchSession(
  db: Queryable,
  sessionId: string,
  refreshTokenId: string,
  now: Date,
): Promise<void> {
  await db('sessions')
    .where({ id: sessionId })
    .update({ refresh_token_id: refreshTokenId, last_activity_at: now });
}

/**
 * Records that the user just proved who they are in this session (a re-authentication, or the current
 * password of a password change): sensitive changes are allowed for a few minutes from then. Also
 * activity. False when the session is no longer live.
 */
export async function recordAuthentication(
  db: Queryable,
  sessionId: string,
  policy: SessionPolicy,
  now: Date,
): Promise<boolean> {
  if (!isUuid(sessionId)) return false;
  const changed = await db('sessions')
    .where({ id: sessionId, is_revoked: false })
    .where('expires_at', '>', now)
    .where('last_activity_at', '>', idleCutoff(policy, now))
    .update({ last_authenticated_at: now, last_activity_at: now });
  return changed > 0;
}

/**
 * In the caller's transaction: whether the session is the user's and not revoked, its row locked until
 * the transaction ends. What the caller records for the session in that transaction (a one-time SSO
 * code, a QR approval) is then ended with it: a revocation racing the caller waits for the commit and
 * ends what was recorded, or committed first and the caller records nothing.
 */
export async function holdUnrevokedSession(
  db: Queryable,
  userId: string,
  sessionId: string | undefined,
): Promise<boolean> {
  if (sessionId === undefined || !isUuid(sessionId)) return false;
  const row: unknown = await db('sessions')
    .where({ id: sessionId, user_id: userId, is_revoked: false })
    .forShare()
    .first('id');
  return row !== undefined;
}

/**
 * Revokes live sessions (with all their refresh tokens, the sessions they vouched for by a QR approval,
 * and the sign-ins they started that nobody finished: endPendingSignInsStartedBy) matching `where`;
 * answers the ids revoked. The
 * `is_revoked = false` condition makes it idempotent and race-free: a session is counted once.
 */
async function revokeSessionsWhere(
  db: Queryable,
  where:
    | {
        userId: string;
        sessionId?: string;
        exceptSessionId?: string | undefined;
        deviceBindingId?: string;
      }
    | { fromGrantIds: readonly string[] },
  reason: string,
  now: Date,
): Promise<string[]> {
  let query = db('sessions').where({ is_revoked: false });
  if ('fromGrantIds' in where) {
    query = query.whereIn('from_grant_id', where.fromGrantIds);
  } else {
    query = query.where({ user_id: where.userId });
    if (where.sessionId !== undefined) query = query.where({ id: where.sessionId });
    if (where.exceptSessionId !== undefined) query = query.whereNot({ id: where.exceptSessionId });
    if (where.deviceBindingId !== undefined) {
      query = query.where({ device_binding_id: where.deviceBindingId });
    }
  }
  const rows: { id: string }[] = await query.update(
    { is_revoked: true, revoked_at: now, revoked_reason: reason.slice(0, 100) },
    ['id'],
  );
  const ids = rows.map((row) => row.id);
  // What these sessions vouched for ends with them: the sessions their QR approvals started (and
  // theirs in turn). A thief who approved a code of their own machine with a copied token and took
  // it at once would otherwise keep a session of their own after the owner ended the copied one.
  // Those can be more than one statement binds (each QR sign-in or inbound login a thief takes is a
  // session): every list below goes a chunk at a time (statement-chunks.ts), each step over all of
  // them before the next, so rows are locked in the order one statement per step locked them.
  for (let started = ids; started.length > 0;) {
    const children: string[] = [];
    for (const chunk of chunksOf(started)) {
      const rows: { id: string }[] = await db('sessions')
        .whereIn('started_by_session_id', chunk)
        .where({ is_revoked: false })
        .update({ is_revoked: true, revoked_at: now, revoked_reason: reason.slice(0, 100) }, ['id']);
      children.push(...rows.map((row) => row.id));
    }
    started = children;
    // One at a time: spreading a list this long into push's arguments can overflow the stack.
    for (const id of started) ids.push(id);
  }
  // This node refuses their access tokens from now on (before the commit: never accepted late).
  announceSessionsEnded(ids);
  const chunks = chunksOf(ids);
  for (const chunk of chunks) {
    await db('refresh_tokens')
      .whereIn('session_id', chunk)
      .where({ is_revoked: false })
      .update({ is_revoked: true, revoked_at: now });
  }
  for (const chunk of chunks) await endPendingSignInsStartedBy(db, chunk, now);
  for (const chunk of chunks) await endEngineSignInsStartedBy(db, chunk, now);
  for (const chunk of chunks) await revokeGrantsStartedBy(db, chunk, now);
  return ids;
}

/**
 * Ends what inbound SSO (docs/inbound-sso.md) made from these grants' access tokens: the main-auth
 * sessions it started (sessions.from_grant_id, with everything revokeSessionsWhere ends with them) and
 * its login tokens not yet used, which expire. Revoking a grant (ending that sign-in to applications, a
 * consent withdrawn, a reused refresh token) must end them too: a thief who copied the application's
 * access token would otherwise keep a session of their own for 30 days. Run it in the transaction that
 * revokes the grants, before anything else there is locked (revokeGrants, endBrowserSignInOf), in the
 * order of every revocation here: sessions, then tokens. A redemption racing it holds its token until
 * it commits: the token step waits for it, and the sessions it started are ended in a second look (only
 * those; a redemption after this commits finds the token expired, or the grant revoked). Answers the
 * sessions ended.
 */
export async function endSessionsFromGrants(
  db: Queryable,
  grantIds: readonly string[],
  now: Date,
): Promise<string[]> {
  // A user's grants can be more than one statement binds (statement-chunks.ts): a chunk at a time,
  // step after step, so rows are locked in the order they were when one statement took each step.
  const chunks = chunksOf([...new Set(grantIds.filter(Boolean))]);
  const ended: string[] = [];
  for (const chunk of chunks) {
    ended.push(...(await revokeSessionsWhere(db, { fromGrantIds: chunk }, 'grant_revoked', now)));
  }
  for (const chunk of chunks) {
    await db('inbound_login_tokens')
      .whereIn('grant_id', chunk)
      .whereNull('used_at')
      .where('expires_at', '>', now)
      .update({ expires_at: now });
  }
  // A redemption that held one of these tokens when the step above looked has committed by now.
  for (const chunk of chunks) {
    ended.push(...(await revokeSessionsWhere(db, { fromGrantIds: chunk }, 'grant_revoked', now)));
  }
  return ended;
}

/**
 * Revokes the user's sessions on one device binding (this browser): what an RP-initiated logout in this
 * browser ends besides the engine's session. Answers how many were revoked.
 */
export async function revokeDeviceSessions(
  db: Queryable,
  userId: string,
  deviceBindingId: string,
  reason: string,
  now: Date,
): Promise<number> {
  return (await revokeSessionsWhere(db, { userId, deviceBindingId }, reason, now)).length;
}

/**
 * A logout's revocation: the session and the user's other live sessions on its device binding (the
 * browser it started in). A sign-in in a browser replaces its refresh cookie but can't see the old
 * one (it is sent to the refresh and logout endpoints only), so the session it replaced lives on,
 * and a copy of that cookie taken before kept it after the owner logged out there. Answers the ids revoked.
 */
export async function revokeSessionAndItsBrowsers(
  db: Queryable,
  userId: string,
  sessionId: string,
  reason: string,
  now: Date,
): Promise<string[]> {
  if (!isUuid(sessionId)) return [];
  const row: { device_binding_id: string | null } | undefined = await db('sessions')
    .where({ id: sessionId, user_id: userId })
    .first('device_binding_id');
  if (!row) return [];
  return row.device_binding_id === null
    ? revokeSessionsWhere(db, { userId, sessionId }, reason, now)
    : revokeSessionsWhere(db, { userId, deviceBindingId: row.device_binding_id }, reason, now);
}

/** Revokes one session of the user; false when it is not theirs or no longer live. */
export async function revokeSession(
  db: Queryable,
  userId: string,
  sessionId: string,
  reason: string,
  now: Date,
): Promise<boolean> {
  if (!isUuid(sessionId)) return false;
  return (await revokeSessionsWhere(db, { userId, sessionId }, reason, now)).length > 0;
}

/**
 * Revokes the user's sessions, all or all but one (spec: revoke-all keeps the current one; a password
 * reset revokes the others), and ends every sign-in of the user through the OIDC pages: the engine's
 * sessions in every browser, every client's refresh tokens, their access tokens and pending codes
 * (endOidcSignInsOf), and the sign-ins begun but not finished: inbound-SSO login tokens, one-time
 * SSO codes, approved QR sign-ins, onboardings (endPendingSignInsOf). The account leaves the saved-account list
 * of every device but the kept session's (unlistAccountFromDevices). The one kept is a main-auth session; no OIDC
 * sign-in is kept. Consents stay. Answers how many sessions ended, main-auth and OIDC sign-ins together. Run it in the caller's
 * transaction: all of it happens, or none.
 */
export async function revokeUserSessions(
  db: Queryable,
  userId: string,
  options: { exceptSessionId?: string; reason: string },
  now: Date,
): Promise<number> {
  const except = options.exceptSessionId;
  const kept = except !== undefined && isUuid(except) ? except : undefined;
  // The user's row first (users, then sessions, then tokens): a login flow finishing holds it from its
  // start (flow-engine.ts), so its session is committed before the look below, or it waits and finds
  // the account signed out after its steps ran, and starts none. A flow whose last screen both named
  // the account and checked its password holds no other row this waits on.
  await db('users').where({ id: userId }).update({ signed_out_everywhere_at: now });
  const revoked = await revokeSessionsWhere(db, { userId, exceptSessionId: kept }, options.reason, now);
  await endPendingSignInsOf(db, userId, now);
  // A sign-in in flight (an inbound login token or a QR approval used, a flow finished) had inserted its
  // session, not yet committed, which the first look could not see; the step above waited for it on the
  // row it used, then skipped it (used). It has committed by now: a second look ends its session, which
  // otherwise kept its refresh cookie for 30 days after the account was signed out everywhere.
  const late = await revokeSessionsWhere(db, { userId, exceptSessionId: kept }, options.reason, now);
  await unlistAccountFromDevices(db, userId, kept, now);
  return revoked.length + late.length + (await endOidcSignInsOf(db, userId, now));
}
