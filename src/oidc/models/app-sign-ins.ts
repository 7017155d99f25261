import type { Queryable } from '../../db/database.js';
import type { EngineSessionPayload } from './engine-sessions.js';

/** One live sign-in of a user through the OIDC pages: the engine's session in one browser. */
export interface AppSignIn {
  /** The engine session's id (its row in oidc_payloads), which endBrowserSignInOf ends. */
  id: string;
  signedInAt: Date;
  /** The applications signed in to in that browser (those the session has an authorization for). */
  applications: { clientId: string; name: string }[];
}

/**
 * The most sign-ins GET /security/app-sign-ins lists: a user starts them at will (a sign-in on the
 * pages in each new browser, each kept 30 days), and an answer naming every one grew without bound,
 * built on the service's thread at every request (as the main-auth sessions' list, listedSessionsAtMost).
 */
export const listedAppSignInsAtMost = 100;

/**
 * The user's live engine sessions (not ended, not expired: what the engine's adapter still finds),
 * latest sign-in first (at most listedAppSignInsAtMost), each with the applications signed in to
 * there, named from oauth_clients (an application deleted since is left out). Never another user's:
 * the rows are those of `account_id`.
 */
export async function listAppSignInsOf(db: Queryable, userId: string, now: Date): Promise<AppSignIn[]> {
  const sessions: { id: string; payload: EngineSessionPayload }[] = await db('oidc_payloads')
    .where({ model: 'Session', account_id: userId })
    .whereNull('ended_at')
    .where((query) => query.whereNull('expires_at').orWhere('expires_at', '>', now))
    // loginTs: seconds, a number the engine writes (a row without one sorts last, as below).
    .orderByRaw(
      "case when jsonb_typeof(payload->'loginTs') = 'number' then (payload->>'loginTs')::numeric end desc nulls last, id",
    )
    .limit(listedAppSignInsAtMost)
    .select('id', 'payload');
  const clientIdsOf = (payload: EngineSessionPayload) => Object.keys(payload.authorizations ?? {});
  const clientIds = [...new Set(sessions.flatMap((session) => clientIdsOf(session.payload)))];
  const clients: { client_id: string; name: string }[] = clientIds.length
    ? await db('oauth_clients').whereIn('client_id', clientIds).select('client_id', 'name')
    : [];
  const names = new Map(clients.map((client) => [client.client_id, client.name]));
  return sessions
    .map((session) => ({
      id: session.id,
      signedInAt: new Date(typeof session.payload.loginTs === 'number' ? session.payload.loginTs * 1000 : 0),
      applications: clientIdsOf(session.payload).flatMap((clientId) => {
        const name = names.get(clientId);
        return name === undefined ? [] : [{ clientId, name }];
      }),
    }))
    .sort((a, b) => b.signedInAt.getTime() - a.signedInAt.getTime() || a.id.localeCompare(b.id));
}
