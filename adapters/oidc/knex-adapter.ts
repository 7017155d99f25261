import type { Knex } from 'knex';
import { errors, Provider, type Adapter, type AdapterPayload } from 'oidc-provider';
import type { Clock } from '../../src/clock.js';
import { sha256 } from '../../src/crypto/digest.js';
import type { Database } from '../../src/db/database.js';
import { preparedStatement, runPrepared, type PreparedStatement } from '../../src/db/prepared-statement.js';
import {
  userWithAccessFromRow,
  userWithAccessQuery,
  type UserWithAccessRow,
} from '../../src/identity/access/user-access.js';
import type { UserRow } from '../../src/identity/users/user.js';
import { accountOf } from '../../src/oidc/account-claims.js';
import {
  endEngineSessions,
  endReplacedEngineSession,
  grantIdsNamedBy,
  type EngineSessionPayload,
} from '../../src/oidc/models/engine-sessions.js';
import { recordSessionGrants } from '../../src/oidc/models/engine-session-grants.js';
import { recordEngineSessionStarter } from '../../src/oidc/models/engine-session-starters.js';
import { recordEarlierSessionOfBrowser } from '../../src/oidc/models/engine-session-predecessors.js';
import { engineSessionCookieName } from '../../src/oidc/engine-session-cookie.js';
import { findClient } from '../../src/oidc/models/oauth-client.js';
import { revokeGrants } from '../../src/oidc/models/grant-revocation.js';
import { recordRevokedGrants } from '../../src/oidc/models/revoked-grant.js';
import { endSessionsFromGrants } from '../../src/identity/sessions/sessions.js';
import { clientMetadata } from '../../src/oidc/client-metadata.js';
import {
  isRefreshTokenGrant,
  keepAccount,
  keepGrant,
  keepRefreshToken,
  takeGrant,
  takeRefreshToken,
} from './request-prefetch.js';

/**
 * The engine's storage, on our tables:
 *
 * - Client             -> oauth_clients (read-only here; clients are created through our API and CLI)
 * - AuthorizationCode  -> authorization_codes (value stored as SHA-256, redemption is a compare-and-set)
 * - RefreshToken       -> oauth_refresh_tokens (value stored as SHA-256, rotation is a compare-and-set)
 * - AccessToken        -> revoking its grant is recorded in oauth_revoked_grants (src/oidc/revoked-grants.ts)
 * - Session            -> oidc_payloads, an ended session marked rather than deleted (SessionAdapter)
 * - everything else    -> oidc_payloads (Interaction, Grant, ReplayDetection, ...)
 *
 * JWT access tokens and client-credentials tokens are never stored.
 */
export function createOidcAdapterFactory(db: Database, clock: Clock): (model: string) => Adapter {
  return (model) => {
    switch (model) {
      case 'Client':
        return new ClientAdapter(db);
      case 'AuthorizationCode':
        return new AuthorizationCodeAdapter(db, clock);
      case 'RefreshToken':
        return new RefreshTokenAdapter(db, clock);
      case 'AccessToken':
        return new AccessTokenAdapter(db, clock);
      case 'Session':
        return new SessionAdapter(db, clock);
      default:
        return new PayloadAdapter(db, clock, model);
    }
  };
}

const expiresAt = (clock: Clock, expiresIn: number) => new Date(clock.now().getTime() + expiresIn * 1000);

function scopesOf(payload: AdapterPayload): string[] {
  return typeof payload.scope === 'string' ? payload.scope.split(' ').filter(Boolean) : [];
}

/** The stored payload never contains the token value itself. */
function withoutValue(payload: AdapterPayload): AdapterPayload {
  const { jti: _value, ...rest } = payload;
  return rest;
}

/**
 * A refresh token read before the engine asks for it (the rate limits in front of the engine), with
 * its Grant and account, all kept for the engine's own reads in the same request (request-prefetch.ts).
 * What the token says, or undefined for no such token; the engine judges it again.
 */
export function refreshTokenReadAhead(db: Database, clock: Clock) {
  const refreshTokens = new RefreshTokenAdapter(db, clock);
  return async (token: string): Promise<AdapterPayload | undefined> => {
    const found = await refreshTokens.readWithGrantAndAccount(token);
    keepRefreshToken(token, found);
    return found;
  };
}

/** Reads our clients; the per-node cache of built clients is src/oidc/client-cache.ts. */
class ClientAdapter implements Adapter {
  constructor(private readonly db: Database) {}

  async find(clientId: string): Promise<AdapterPayload | undefined> {
    const client = await findClient(this.db, clientId);
    // A disabled client does not exist for the engine: authorize renders an error, token says invalid_client.
    return client?.isActive ? (clientMetadata(client) as AdapterPayload) : undefined;
  }

  async upsert(): Promise<void> {
    throw new Error('clients are managed through the identity API and CLI, not the engine');
  }
  async destroy(): Promise<void> {
    throw new Error('clients are managed through the identity API and CLI, not the engine');
  }
  async consume(): Promise<void> {}
  async revokeByGrantId(): Promise<void> {}
  async findByUid(): Promise<undefined> {
    return undefined;
  }
  async findByUserCode(): Promise<undefined> {
    return undefined;
  }
}

interface CodeRow {
  payload: AdapterPayload;
  is_used: boolean;
  session_ended: boolean;
}

class AuthorizationCodeAdapter implements Adapter {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
  ) {}

  async upsert(code: string, payload: AdapterPayload, expiresIn: number): Promise<void> {
    // The engine's payload lacks the request's state; the spec's table keeps it.
    const state = Provider.ctx?.oidc.params?.state;
    await this.db('authorization_codes').insert({
      code_hash: sha256(code),
      user_id: payload.accountId,
      client_id: payload.clientId,
      redirect_uri: payload.redirectUri,
      scopes: scopesOf(payload),
      state: typeof state === 'string' ? state.slice(0, 255) : null,
      code_challenge: payload.codeChallenge ?? null,
      code_challenge_method: payload.codeChallengeMethod ?? null,
      grant_id: payload.grantId,
      expires_at: expiresAt(this.clock, expiresIn),
      payload: JSON.stringify(withoutValue(payload)),
    });
  }

  /**
   * A code not yet redeemed whose browser session has ended since (a logout, "sign out everywhere")
   * is not found: an authorize that read the session just before it ended issues its code after the
   * end, and that code must not start a grant. A session lives on under a new id after a sign-in (same
   * uid), so "ended" is: no live row of that uid. A redeemed code is still found: presenting it again
   * is a replay, which revokes its grant.
   */
  async find(code: string): Promise<AdapterPayload | undefined> {
    const row: CodeRow | undefined = await this.db('authorization_codes as code')
      .where({ 'code.code_hash': sha256(code) })
      .first(
        'code.payload',
        'code.is_used',
        this.db.raw(
          `code.payload->>'sessionUid' is not null and not exists (
             select 1 from oidc_payloads as session
              where session.model = 'Session' and session.uid = code.payload->>'sessionUid'
                and session.ended_at is null
                and (session.expires_at is null or session.expires_at > ?)
           ) as session_ended`,
          [this.clock.now()],
        ),
      );
    if (!row || (!row.is_used && row.session_ended)) return undefined;
    return { ...row.payload, jti: code, ...(row.is_used ? { consumed: true } : {}) };
  }

  /**
   * Redemption as compare-and-set: of two concurrent redemptions exactly one flips is_used. The loser is
   * a replay: the grant behind the code is revoked (so the winner's refresh token dies too) and the
   * request fails with invalid_grant.
   */
  async consume(code: string): Promise<void> {
    const [row] = await this.db('authorization_codes')
      .where({ code_hash: sha256(code), is_used: false })
      .update({ is_used: true }, ['grant_id']);
    if (!row) {
      const grantId = await this.db('authorization_codes')
        .where({ code_hash: sha256(code) })
        .first('grant_id')
        .then((found?: { grant_id: string }) => found?.grant_id);
      if (grantId) await revokeGrantFamily(this.db, this.clock, grantId);
      throw new errors.InvalidGrant('authorization code already consumed');
    }
  }

  async destroy(code: string): Promise<void> {
    await this.db('authorization_codes')
      .where({ code_hash: sha256(code) })
      .delete();
  }

  async revokeByGrantId(grantId: string): Promise<void> {
    await this.db('authorization_codes').where({ grant_id: grantId }).delete();
  }

  async findByUid(): Promise<undefined> {
    return undefined;
  }
  async findByUserCode(): Promise<undefined> {
    return undefined;
  }
}

interface RefreshTokenRow {
  payload: AdapterPayload;
  consumed_at: Date | null;
}

interface GrantColumns {
  grant_payload: AdapterPayload | null;
  grant_consumed_at: Date | null;
}

function refreshTokenFromRow(token: string, row: RefreshTokenRow): AdapterPayload {
  return { ...row.payload, jti: token, ...(row.consumed_at ? { consumed: true } : {}) };
}

/**
 * The engine rotates a refresh token by calling `consume(old)` and then `upsert(new)` in the same
 * request. The compare-and-set runs at the upsert, in one statement: the old token is consumed and
 * the new one inserted together, or neither (one commit, one round trip).
 */
const rotations = new WeakMap<object, string>();

/**
 * The compare-and-set of a rotation: the old token is consumed (and pointed at its replacement) and the
 * new one inserted in one statement, or neither when another request consumed the old one first.
 */
const rotation = preparedStatement<{ token_hash: string }>(
  'oidc:refresh-token-rotation',
  `with consumed as (
     update oauth_refresh_tokens
        set consumed_at = $1, revoked_at = $1, replaced_by_token_hash = $2
      where token_hash = $3 and consumed_at is null and revoked_at is null
      returning token_family_id
   )
   insert into oauth_refresh_tokens (token_hash, token_family_id, user_id, client_id, scopes, expires_at, payload)
   select $2, $4, $5, $6, $7::text[], $8, $9::jsonb
     from consumed
   returning token_hash`,
);

class RefreshTokenAdapter implements Adapter {
  /**
   * The refresh_token grant reads the token, then its Grant, then its account: readWithGrantAndAccount
   * reads all three in this one statement, and the Grant and the account wait in request-prefetch.ts
   * for the engine to ask. Written out once (the account part from the shared query builder): building
   * it with knex at every refresh cost more CPU than PostgreSQL spent running it.
   */
  readonly #tokenWithGrantAndAccount: PreparedStatement<
    RefreshTokenRow & GrantColumns & Partial<UserWithAccessRow<UserRow>>
  >;

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
  ) {
    const account = userWithAccessQuery(db).whereRaw('users.id = token.user_id').toQuery();
    this.#tokenWithGrantAndAccount = preparedStatement(
      'oidc:refresh-token-with-grant-and-account',
      `select token.payload, token.consumed_at,
              family_grant.payload as grant_payload, family_grant.consumed_at as grant_consumed_at,
              account.*
         from oauth_refresh_tokens as token
         left join oidc_payloads as family_grant
           on family_grant.id = token.token_family_id and family_grant.model = 'Grant'
          and (family_grant.expires_at is null or family_grant.expires_at > $1)
         left join lateral (${account}) as account on true
        where token.token_hash = $2 and (token.revoked_at is null or token.consumed_at is not null)`,
    );
  }

  async upsert(token: string, payload: AdapterPayload, expiresIn: number): Promise<void> {
    const tokenHash = sha256(token);
    const row = {
      tokenHash,
      familyId: payload.grantId,
      userId: payload.accountId,
      clientId: payload.clientId,
      scopes: scopesOf(payload),
      expiresAt: expiresAt(this.clock, expiresIn),
      payload: JSON.stringify(withoutValue(payload)),
    };
    const context = Provider.ctx;
    const replaced = context ? rotations.get(context) : undefined;
    if (replaced === undefined || replaced === token) {
      await this.db.raw(
        `insert into oauth_refresh_tokens (token_hash, token_family_id, user_id, client_id, scopes, expires_at, payload)
         values (:tokenHash, :familyId, :userId, :clientId, cast(:scopes as text[]), :expiresAt, cast(:payload as jsonb))
         on conflict (token_hash) do update set payload = excluded.payload, expires_at = excluded.expires_at, scopes = excluded.scopes`,
        row,
      );
      return;
    }
    rotations.delete(context!);
    const now = this.clock.now();
    const rotated = await runPrepared(this.db, rotation, [
      now,
      tokenHash,
      sha256(replaced),
      row.familyId,
      row.userId,
      row.clientId,
      row.scopes,
      row.expiresAt,
      row.payload,
    ]);
    if (rotated.rowCount === 0) {
      // Another request rotated (or revoked) this token first: a second presentation, which is reuse.
      await revokeGrantFamily(this.db, this.clock, row.familyId as string);
      throw new errors.InvalidGrant('refresh token already used');
    }
  }

  /**
   * Returns active tokens and rotated-out ones (marked consumed, so the engine treats a second
   * presentation as reuse and revokes the family); tokens revoked otherwise are not found.
   */
  async find(token: string): Promise<AdapterPayload | undefined> {
    const readAhead = takeRefreshToken(token);
    if (readAhead) return readAhead.found;
    if (isRefreshTokenGrant()) return this.readWithGrantAndAccount(token);
    const row: RefreshTokenRow | undefined = await this.db('oauth_refresh_tokens')
      .where({ token_hash: sha256(token) })
      .where((query) => query.whereNull('revoked_at').orWhereNotNull('consumed_at'))
      .first('payload', 'consumed_at');
    return row && refreshTokenFromRow(token, row);
  }

  /**
   * The token with its Grant and its account, in one statement; the Grant and the account wait in
   * request-prefetch.ts for the engine to ask.
   */
  async readWithGrantAndAccount(token: string): Promise<AdapterPayload | undefined> {
    const { rows } = await runPrepared(this.db, this.#tokenWithGrantAndAccount, [
      this.clock.now(),
      sha256(token),
    ]);
    const row = rows[0];
    if (!row) return undefined;
    const { payload, consumed_at, grant_payload, grant_consumed_at, ...accountRow } = row;
    keepGrant(
      String(payload.grantId),
      grant_payload ? payloadFromRow({ payload: grant_payload, consumed_at: grant_consumed_at }) : undefined,
    );
    keepAccount(
      String(payload.accountId),
      accountRow.id ? accountOf(userWithAccessFromRow(accountRow as UserWithAccessRow<UserRow>)) : undefined,
    );
    return refreshTokenFromRow(token, { payload, consumed_at });
  }

  /**
   * The first half of a rotation: remembered for the upsert of the replacement, which consumes this
   * token as a compare-and-set (of two concurrent refreshes exactly one wins; the loser presented a
   * token that is no longer active, which is reuse: the whole family is revoked).
   */
  async consume(token: string): Promise<void> {
    const context = Provider.ctx;
    if (!context) throw new Error('a refresh token is consumed only while the engine rotates it');
    rotations.set(context, token);
  }

  async destroy(token: string): Promise<void> {
    await this.db('oauth_refresh_tokens')
      .where({ token_hash: sha256(token) })
      .whereNull('revoked_at')
      .update({ revoked_at: this.clock.now() });
  }

  async revokeByGrantId(grantId: string): Promise<void> {
    await this.db('oauth_refresh_tokens')
      .where({ token_family_id: grantId })
      .whereNull('revoked_at')
      .update({ revoked_at: this.clock.now() });
  }

  async findByUid(): Promise<undefined> {
    return undefined;
  }
  async findByUserCode(): Promise<undefined> {
    return undefined;
  }
}

/**
 * Revokes everything issued from one authorization: its refresh tokens, codes, the grant itself and
 * its access tokens (recorded as a revoked grant).
 */
async function revokeGrantFamily(db: Database, clock: Clock, grantId: string): Promise<void> {
  await db.transaction((trx) => revokeGrants(trx, [grantId], clock.now()));
}

interface PayloadRow {
  payload: AdapterPayload;
  consumed_at: Date | null;
}

function payloadFromRow(row: PayloadRow): AdapterPayload {
  return row.consumed_at
    ? { ...row.payload, consumed: Math.floor(row.consumed_at.getTime() / 1000) }
    : row.payload;
}

/**
 * The account a row belongs to, so that ending every sign-in of a user finds it: a Session's or Grant's
 * own, or the sign-in an Interaction finished and holds until the browser comes back for it (a login
 * that passed the old password must not be taken after the user signed out everywhere).
 */
function accountOfPayload(payload: AdapterPayload): string | null {
  if (typeof payload.accountId === 'string') return payload.accountId;
  const result = (payload as { result?: { login?: { accountId?: unknown } } }).result;
  return typeof result?.login?.accountId === 'string' ? result.login.accountId : null;
}

class PayloadAdapter implements Adapter {
  constructor(
    protected readonly db: Database,
    protected readonly clock: Clock,
    private readonly model: string,
  ) {}

  async upsert(id: string, payload: AdapterPayload, expiresIn: number | undefined): Promise<void> {
    await this.upsertQuery(id, payload, expiresIn);
  }

  /** The statement that saves a payload (SessionAdapter adds to it). */
  protected upsertQuery(
    id: string,
    payload: AdapterPayload,
    expiresIn: number | undefined,
    /** Columns of a new row only (SessionAdapter: a renamed session's ended_at). */
    inserted: Record<string, unknown> = {},
  ): Knex.QueryBuilder {
    return this.db('oidc_payloads')
      .insert({
        model: this.model,
        id,
        payload: JSON.stringify(payload),
        grant_id: payload.grantId ?? null,
        uid: payload.uid ?? null,
        account_id: accountOfPayload(payload),
        expires_at: expiresIn ? expiresAt(this.clock, expiresIn) : null,
        ...inserted,
      })
      .onConflict(['model', 'id'])
      .merge(['payload', 'grant_id', 'uid', 'account_id', 'expires_at']);
  }

  /** Narrows a read to the rows still in use (SessionAdapter: not ended). */
  protected live(query: Knex.QueryBuilder): Knex.QueryBuilder {
    return query;
  }

  async #findWhere(where: Record<string, string>): Promise<AdapterPayload | undefined> {
    const row: PayloadRow | undefined = await this.live(
      this.db('oidc_payloads')
        .where({ model: this.model, ...where })
        .where((query) => query.whereNull('expires_at').orWhere('expires_at', '>', this.clock.now())),
    ).first('payload', 'consumed_at');
    return row && payloadFromRow(row);
  }

  async find(id: string): Promise<AdapterPayload | undefined> {
    const prefetched = this.model === 'Grant' ? takeGrant(id) : undefined;
    return prefetched ? prefetched.found : this.#findWhere({ id });
  }

  findByUid(uid: string) {
    return this.#findWhere({ uid });
  }

  async findByUserCode(): Promise<undefined> {
    return undefined;
  }

  async consume(id: string): Promise<void> {
    await this.db('oidc_payloads').where({ model: this.model, id }).update({ consumed_at: this.clock.now() });
  }

  async destroy(id: string): Promise<void> {
    await this.db('oidc_payloads').where({ model: this.model, id }).delete();
  }

  async revokeByGrantId(grantId: string): Promise<void> {
    await this.db('oidc_payloads').where({ model: this.model, grant_id: grantId }).delete();
  }
}

/**
 * The engine saves a session at the end of every request that read it: after a delete, a request that
 * read it just before a logout or "sign out everywhere" would insert it again, signed in. So an ended
 * session is marked (endEngineSessions), a later save only rewrites its payload, and a marked row is
 * never found.
 */
class SessionAdapter extends PayloadAdapter {
  constructor(db: Database, clock: Clock) {
    super(db, clock, 'Session');
  }

  protected override live(query: Knex.QueryBuilder): Knex.QueryBuilder {
    return query.whereNull('ended_at');
  }

  /** Saves the session and, in the same statement, records the grants it names (engine-session-grants.ts). */
  override async upsert(id: string, payload: AdapterPayload, expiresIn: number | undefined): Promise<void> {
    await this.#save(id, payload, expiresIn);
    // A sign-in a main-auth session vouched for (a QR approval on the pages) ends with that session.
    const startedBy = startedBySessionOfThisRequest();
    if (payload.uid && startedBy) {
      await recordEngineSessionStarter(this.db, payload.uid, startedBy, this.clock.now());
    }
    // A browser whose cookie names a session the engine did not find starts another: its logout ends
    // the earlier one too, should a copy of the cookie hold it under a new id (engine-session-predecessors.ts).
    const earlier = staleBrowserSessionIdOfThisRequest(id);
    if (payload.uid && earlier) await recordEarlierSessionOfBrowser(this.db, payload.uid, earlier);
  }

  async #save(id: string, payload: AdapterPayload, expiresIn: number | undefined): Promise<void> {
    // Under a new id (the engine renames its session at every return from the pages): the old id ends
    // in this statement, and the new row is live only if the old one still was, so a session a logout
    // ended while this request ran is not saved back to life (endReplacedEngineSession).
    const replacedId = idReplacedBy(id);
    const now = this.clock.now();
    const saved = this.upsertQuery(
      id,
      payload,
      expiresIn,
      replacedId === undefined
        ? {}
        : {
            ended_at: this.db.raw(
              'case when exists (select 1 from replaced_session) then null else cast(? as timestamptz) end',
              [now],
            ),
          },
    );
    const grantIds = grantIdsNamedBy(payload as EngineSessionPayload);
    if (replacedId === undefined && (!payload.uid || grantIds.length === 0)) {
      await saved;
      return;
    }
    const statement = (
      replacedId === undefined
        ? this.db.queryBuilder()
        : this.db.with('replaced_session', endReplacedEngineSession(this.db, replacedId, now))
    ).with('saved_session', saved);
    if (!payload.uid || grantIds.length === 0) {
      await statement.select(this.db.raw('1'));
      return;
    }
    await recordSessionGrants(
      statement,
      payload.uid,
      grantIds,
      expiresIn ? expiresAt(this.clock, expiresIn) : null,
    );
  }

  /** A logout. The old id of a session given a new one ends where the new one is saved (#save). */
  override async destroy(id: string): Promise<void> {
    if (isBeingReplaced(id)) return;
    await endEngineSessions(this.db, { id }, this.clock.now());
  }
}

/**
 * The id the engine's session of this request had before it gave it the new one `id` (Session's
 * resetIdentifier: a return from the sign-in pages, a partial logout), if it is saving it under `id`.
 */
function idReplacedBy(id: string): string | undefined {
  const session = Provider.ctx?.oidc?.session as { id?: unknown; oldId?: unknown } | undefined;
  return session?.id === id && typeof session.oldId === 'string' && session.oldId !== id
    ? session.oldId
    : undefined;
}

/** Whether the engine's session of this request is leaving the id `id` for a new one (Session.save). */
function isBeingReplaced(id: string): boolean {
  const session = Provider.ctx?.oidc?.session as { id?: unknown; oldId?: unknown } | undefined;
  return session?.oldId === id && session.id !== id;
}

/**
 * The session id this request's browser sent, when the engine's session saved as `id` is not that one
 * nor its rename: the engine found none under it (ended, or renamed in a copy of the cookie).
 */
function staleBrowserSessionIdOfThisRequest(id: string): string | undefined {
  const oidc = Provider.ctx?.oidc;
  const session = oidc?.session as { id?: unknown; oldId?: unknown } | undefined;
  if (!oidc || session?.id !== id) return undefined;
  const sent = signedCookieWithoutSideEffects(oidc.cookies, engineSessionCookieName);
  return sent && sent !== id && sent !== session.oldId ? sent : undefined;
}

/**
 * A signed cookie's value if its signature holds. Not through `get(name, { signed: true })`: that
 * deletes a `.sig` that does not match, and a browser shares cookies between ports of one host (an
 * identity provider next to this one, as in development, sets a `_session` of its own).
 */
function signedCookieWithoutSideEffects(cookies: unknown, name: string): string | undefined {
  const jar = cookies as {
    get(name: string, options: { signed: false }): string | undefined;
    keys?: { verify(data: string, digest: string): boolean };
  };
  const value = jar.get(name, { signed: false });
  const signature = jar.get(`${name}.sig`, { signed: false });
  return value && signature && jar.keys?.verify(`${name}=${value}`, signature) ? value : undefined;
}

/**
 * The main-auth session that vouched for the sign-in the engine takes in this request (its resume after
 * the pages: the login result names it, interaction.ts), if any. The interaction the engine made for
 * the next prompt (consent) replaces the resumed one but carries its login as its last submission.
 */
function startedBySessionOfThisRequest(): string | undefined {
  type Login = { login?: { startedBySessionId?: unknown } };
  const interaction = Provider.ctx?.oidc?.entities.Interaction as
    { result?: Login; lastSubmission?: Login } | undefined;
  // When the engine asks for consent next, the interaction it made holds the login as lastSubmission.
  const startedBy = (interaction?.result?.login ?? interaction?.lastSubmission?.login)?.startedBySessionId;
  return typeof startedBy === 'string' ? startedBy : undefined;
}

/**
 * JWT access tokens are not stored (the engine finds none here). The engine revokes a grant's access
 * tokens when it revokes the grant (a replayed code, a reused or revoked refresh token, a logout): our
 * tokens name their grant, so the grant is recorded as revoked and every node refuses its tokens.
 */
class AccessTokenAdapter extends PayloadAdapter {
  constructor(db: Database, clock: Clock) {
    super(db, clock, 'AccessToken');
  }

  override async revokeByGrantId(grantId: string): Promise<void> {
    const now = this.clock.now();
    // The main-auth sessions inbound SSO started from the grant's access tokens end with it (sessions
    // first: endSessionsFromGrants).
    await this.db.transaction(async (trx) => {
      await endSessionsFromGrants(trx, [grantId], now);
      await recordRevokedGrants(trx, [grantId], now);
    });
  }
}
