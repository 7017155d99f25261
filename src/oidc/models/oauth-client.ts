import { EventEmitter } from 'node:events';
import { z } from 'zod';
import { constantTimeEqual, randomSecret, sha256 } from '../../crypto/digest.js';
import type { Queryable } from '../../db/database.js';
import { ApiError } from '../../http/api-error.js';
import { revokeGrantsOfClient } from './grant-revocation.js';
import { applicationTypeOf, redirectUriSchema, redirectUriUnfitFor } from '../redirect-uri.js';
import { isOidcScope, isServiceScope, oidcScopes, serviceScopePattern, servicePrefix } from '../scopes.js';

/** An OAuth client as the rest of the service sees it (table oauth_clients). */
export interface OAuthClient {
  id: string;
  clientId: string;
  type: ClientType;
  name: string;
  redirectUris: string[];
  postLogoutRedirectUris: string[];
  allowedScopes: string[];
  grantTypes: GrantType[];
  isActive: boolean;
  /**
   * Marked by an administrator as one of the service's own applications: its access tokens, with the
   * roles scope granted, act with the user's roles and permissions at the management endpoints.
   */
  firstParty: boolean;
  ownerId: string | null;
  createdAt: Date;
  updatedAt: Date;
  /**
   * Access tokens issued until then are refused: set when the client is disabled (enableClient), and
   * when a scope taken from it is given back (scopeChange).
   */
  tokensNotBefore: Date | null;
  /** When a scope was last taken from the client (scopeChange). */
  scopesTakenAt: Date | null;
  /** SHA-256 of the secret (confidential clients); never the secret. */
  clientSecretHash: string | null;
}

export const clientTypes = ['public', 'confidential'] as const;
export type ClientType = (typeof clientTypes)[number];
export const grantTypes = ['authorization_code', 'refresh_token', 'client_credentials'] as const;
export type GrantType = (typeof grantTypes)[number];

const scopeSchema = z.string().refine((scope) => isOidcScope(scope) || serviceScopePattern.test(scope), {
  message: `must be one of ${oidcScopes.join(', ')} or service:<catalogue-permission>`,
});

/**
 * Characters a client's name may not hold: the name is shown to people on the sign-in, consent and
 * logout pages, inside a sentence, and these would reorder or break what is around it. Control
 * characters (C0, C1: new lines, tabs), line and paragraph separators, and the bidirectional
 * formatting characters (Unicode UAX #9: the marks LRM, RLM and ALM, the embeddings and overrides
 * U+202A-U+202E, the isolates U+2066-U+2069): with U+202E, "\u202Eelgoog" reads "google". Names in
 * right-to-left scripts need none of them, and the joiners that scripts and emoji use (U+200C, U+200D)
 * stay allowed.
 */
const unshowableInName = /[\p{Cc}\p{Zl}\p{Zp}\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/u;

const clientNameSchema = z
  .string()
  .trim()
  .min(1)
  .max(255)
  .refine((name) => !unshowableInName.test(name), {
    message:
      'must not contain control characters, line breaks or bidirectional formatting characters (U+200E, U+200F, U+061C, U+202A-U+202E, U+2066-U+2069)',
  });

export const newClientSchema = z
  .object({
    name: clientNameSchema,
    type: z.enum(clientTypes),
    redirectUris: z.array(redirectUriSchema).max(50).default([]),
    postLogoutRedirectUris: z.array(redirectUriSchema).max(50).default([]),
    scopes: z.array(scopeSchema).min(1).max(100),
    grantTypes: z.array(z.enum(grantTypes)).min(1).default(['authorization_code', 'refresh_token']),
    ownerId: z.uuid().nullable().default(null),
    firstParty: z.boolean().default(false),
  })
  .superRefine((client, issues) => {
    const problem = (path: string, message: string) =>
      issues.addIssue({ code: 'custom', path: [path], message });
    const grants = new Set(client.grantTypes);
    const serviceScopes = client.scopes.filter(isServiceScope);
    if (grants.has('client_credentials')) {
      // Spec, OAuth client rule 3: service clients are confidential, client-credentials only, no redirects.
      if (client.type !== 'confidential') problem('type', 'client_credentials needs a confidential client');
      if (grants.size !== 1) problem('grantTypes', 'a service client has grant type client_credentials only');
      if (client.redirectUris.length > 0 || client.postLogoutRedirectUris.length > 0) {
        problem('redirectUris', 'a service client has no redirect URIs');
      }
      if (serviceScopes.length !== client.scopes.length) {
        problem('scopes', 'a service client has only service:<catalogue-permission> scopes');
      }
      if (client.firstParty) problem('firstParty', 'a service client acts by its service scopes only');
      return;
    }
    if (serviceScopes.length > 0) problem('scopes', 'service scopes are only for client_credentials clients');
    if (grants.has('refresh_token') && !grants.has('authorization_code')) {
      problem('grantTypes', 'refresh_token comes with authorization_code');
    }
    if (grants.has('authorization_code') && client.redirectUris.length === 0) {
      problem('redirectUris', 'authorization_code needs at least one redirect URI');
    }
    const type = applicationTypeOf(client.redirectUris);
    for (const field of ['redirectUris', 'postLogoutRedirectUris'] as const) {
      client[field].forEach((uri, index) => {
        const unfit = redirectUriUnfitFor(type, uri);
        if (unfit) issues.addIssue({ code: 'custom', path: [field, index], message: unfit });
      });
    }
  });

export type NewClient = z.input<typeof newClientSchema>;

interface OAuthClientRow {
  id: string;
  client_id: string;
  client_secret_hash: string | null;
  type: ClientType;
  name: string;
  redirect_uris: string[];
  post_logout_redirect_uris: string[];
  allowed_scopes: string[];
  grant_types: GrantType[];
  is_active: boolean;
  first_party: boolean;
  owner_id: string | null;
  created_at: Date;
  updated_at: Date;
  tokens_not_before: Date | null;
  scopes_taken_at: Date | null;
}

function fromRow(row: OAuthClientRow): OAuthClient {
  return {
    id: row.id,
    clientId: row.client_id,
    type: row.type,
    name: row.name,
    redirectUris: row.redirect_uris,
    postLogoutRedirectUris: row.post_logout_redirect_uris,
    allowedScopes: row.allowed_scopes,
    grantTypes: row.grant_types,
    isActive: row.is_active,
    firstParty: row.first_party,
    ownerId: row.owner_id,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    tokensNotBefore: row.tokens_not_before,
    scopesTakenAt: row.scopes_taken_at,
    clientSecretHash: row.client_secret_hash,
  };
}

export interface CreatedClient {
  client: OAuthClient;
  /** The plaintext secret of a confidential client: returned once, here, and never stored. */
  clientSecret?: string;
}

/** Registers a client; the catalogue of permissions decides which service scopes exist. */
export async function createClient(db: Queryable, input: NewClient): Promise<CreatedClient> {
  const client = newClientSchema.parse(input);
  const unknown = await unknownServicePermissions(db, client.scopes);
  if (unknown.length > 0) {
    throw new ApiError(
      400,
      'invalid_client_metadata',
      `Unknown catalogue permission in ${unknown.join(', ')}.`,
      {
        scopes: unknown,
      },
    );
  }
  const clientSecret = client.type === 'confidential' ? randomSecret(32) : undefined;
  const [row] = await db<OAuthClientRow>('oauth_clients').insert(
    {
      client_id: randomSecret(18),
      client_secret_hash: clientSecret === undefined ? null : hashClientSecret(clientSecret),
      type: client.type,
      name: client.name,
      redirect_uris: unique(client.redirectUris),
      post_logout_redirect_uris: unique(client.postLogoutRedirectUris),
      allowed_scopes: unique(client.scopes),
      grant_types: unique(client.grantTypes),
      owner_id: client.ownerId,
      first_party: client.firstParty,
    },
    '*',
  );
  return clientSecret === undefined ? { client: fromRow(row!) } : { client: fromRow(row!), clientSecret };
}

async function unknownServicePermissions(db: Queryable, scopes: string[]): Promise<string[]> {
  const wanted = scopes.filter(isServiceScope).map((scope) => scope.slice(servicePrefix.length));
  if (wanted.length === 0) return [];
  const known = new Set(
    (await db('permissions').whereIn('key', wanted).whereNot('key', '*').select('key')).map(
      (row: { key: string }) => row.key,
    ),
  );
  return wanted.filter((key) => !known.has(key)).map((key) => `${servicePrefix}${key}`);
}

export async function findClient(db: Queryable, clientId: string): Promise<OAuthClient | undefined> {
  const row = await db<OAuthClientRow>('oauth_clients').where({ client_id: clientId }).first();
  return row ? fromRow(row) : undefined;
}

/**
 * The version of a client's row: its xmin, which every write of the row replaces (PostgreSQL's row
 * versioning, no clock involved); undefined when there is no such row. The client cache compares it
 * with the change feed's.
 */
export async function clientRowVersion(db: Queryable, clientId: string): Promise<string | undefined> {
  const row = (await db('oauth_clients')
    .where({ client_id: clientId })
    .first(db.raw('xmin::text as version'))) as { version: string } | undefined;
  return row?.version;
}

/** Every client (oldest first), or those of a status or matching a search (see ClientListQuery). */
export async function listClients(
  db: Queryable,
  filter: Pick<ClientListQuery, 'status' | 'search'> = {},
): Promise<OAuthClient[]> {
  const rows = await clientsMatching(db, filter).orderBy(['created_at', 'id']).select('*');
  return rows.map(fromRow);
}

const clientChanges = new EventEmitter();

/** Calls `listener(clientId)` whenever this process changes a client (caches drop their copy). */
export function onClientChange(listener: (clientId: string) => void): () => void {
  clientChanges.on('change', listener);
  return () => clientChanges.off('change', listener);
}

/**
 * Disables a client and takes back everything it was given: the grants of its users (their refresh
 * tokens, unused codes and access tokens: revokeGrantsOfClient) and, through tokens_not_before, every
 * access token issued to it until now, its client-credentials tokens too. A client is often disabled
 * because its secret or tokens leaked: enabling it again, say after a new secret, must not bring back
 * what was taken. Run it in the caller's transaction; false for an unknown client.
 */
export async function disableClient(db: Queryable, clientId: string, now: Date): Promise<boolean> {
  const changed = await db('oauth_clients')
    .where({ client_id: clientId })
    .update({ is_active: false, tokens_not_before: now, updated_at: now });
  if (changed > 0) await revokeGrantsOfClient(db, clientId, now);
  announceClientChange(clientId);
  return changed > 0;
}

const secretHashPrefix = 'sha256:';

export function hashClientSecret(secret: string): string {
  return `${secretHashPrefix}${sha256(secret)}`;
}

export function clientSecretMatches(secret: string, storedHash: string): boolean {
  return constantTimeEqual(hashClientSecret(secret), storedHash);
}

/** How the CLI and the APIs show a client: the spec's field names, never the secret or its hash. */
export function clientView(client: OAuthClient) {
  return {
    client_id: client.clientId,
    name: client.name,
    type: client.type,
    redirect_uris: client.redirectUris,
    post_logout_redirect_uris: client.postLogoutRedirectUris,
    allowed_scopes: client.allowedScopes,
    grant_types: client.grantTypes,
    is_active: client.isActive,
    first_party: client.firstParty,
    owner_id: client.ownerId,
    created_at: client.createdAt.toISOString(),
  };
}

function unique<T extends string>(values: T[]): T[] {
  return [...new Set(values)];
}

/** A page of clients, newest first, with the number of clients that match. */
export interface ClientPage {
  clients: OAuthClient[];
  total: number;
}

export interface ClientListQuery {
  limit: number;
  offset: number;
  status?: 'active' | 'disabled' | undefined;
  /** Part of the name or the client_id, case-insensitive. */
  search?: string | undefined;
}

function clientsMatching(db: Queryable, filter: Pick<ClientListQuery, 'status' | 'search'>) {
  const builder = db<OAuthClientRow>('oauth_clients');
  if (filter.status) builder.where({ is_active: filter.status === 'active' });
  if (filter.search) {
    const pattern = `%${filter.search.replace(/[\\%_]/g, (character) => `\\${character}`)}%`;
    builder.where((where) => where.whereILike('name', pattern).orWhereILike('client_id', pattern));
  }
  return builder;
}

export async function listClientPage(db: Queryable, query: ClientListQuery): Promise<ClientPage> {
  const [rows, [counted]] = await Promise.all([
    clientsMatching(db, query)
      .orderBy([{ column: 'created_at', order: 'desc' }, 'id'])
      .limit(query.limit)
      .offset(query.offset),
    clientsMatching(db, query).select(db.raw('count(*)::int as total')) as unknown as Promise<
      { total: number }[]
    >,
  ]);
  return { clients: rows.map(fromRow), total: counted?.total ?? 0 };
}

/** What an administrator may change of a client; its type, client_id and secret change otherwise. */
export const clientChangesSchema = z
  .object({
    name: z.string(),
    redirectUris: z.array(z.string()),
    postLogoutRedirectUris: z.array(z.string()),
    scopes: z.array(z.string()),
    grantTypes: z.array(z.enum(grantTypes)),
  })
  .partial();
export type ClientChanges = z.infer<typeof clientChangesSchema>;

/**
 * Applies changes to a client, checked by the same rules as a new client (the merged result must be a
 * valid client); returns undefined when there is no such client. A ZodError names the bad fields.
 */
export async function updateClient(
  db: Queryable,
  clientId: string,
  changes: ClientChanges,
  now: Date,
): Promise<OAuthClient | undefined> {
  const current = await findClientForUpdate(db, clientId);
  if (!current) return undefined;
  const merged = newClientSchema.parse({
    name: changes.name ?? current.name,
    type: current.type,
    redirectUris: changes.redirectUris ?? current.redirectUris,
    postLogoutRedirectUris: changes.postLogoutRedirectUris ?? current.postLogoutRedirectUris,
    scopes: changes.scopes ?? current.allowedScopes,
    grantTypes: changes.grantTypes ?? current.grantTypes,
    ownerId: current.ownerId,
    firstParty: current.firstParty,
  });
  const unknown = await unknownServicePermissions(db, merged.scopes);
  if (unknown.length > 0) {
    throw new ApiError(
      400,
      'invalid_client_metadata',
      `Unknown catalogue permission in ${unknown.join(', ')}.`,
      {
        scopes: unknown,
      },
    );
  }
  const scopes = unique(merged.scopes);
  const [row] = await db<OAuthClientRow>('oauth_clients')
    .where({ client_id: clientId })
    .update(
      {
        name: merged.name,
        redirect_uris: unique(merged.redirectUris),
        post_logout_redirect_uris: unique(merged.postLogoutRedirectUris),
        allowed_scopes: scopes,
        grant_types: unique(merged.grantTypes),
        updated_at: now,
        ...(await scopeChange(current, scopes, now)),
      },
      '*',
    );
  announceClientChange(clientId);
  return fromRow(row!);
}

/**
 * What a change of a client's scopes writes beside them. Its tokens are judged by the client as it is
 * at each use, so a scope taken from the client is taken from them at once (scopesStillAllowed), and
 * the time is kept. A scope given back must not reach the tokens issued before one was taken: giving
 * scopes moves tokens_not_before up to that time, after waiting out its second (as enableClient does),
 * and those tokens are refused; they are replaced at the client's next refresh or token request. A
 * token issued since has only the scopes the client had then, and stays.
 */
async function scopeChange(
  current: OAuthClient,
  scopes: readonly string[],
  now: Date,
): Promise<Partial<Pick<OAuthClientRow, 'scopes_taken_at' | 'tokens_not_before'>>> {
  const taken = current.allowedScopes.some((scope) => !scopes.includes(scope));
  const given = scopes.some((scope) => !current.allowedScopes.includes(scope));
  const written = taken ? { scopes_taken_at: now } : {};
  const takenBefore = current.scopesTakenAt;
  if (!given || !takenBefore) return written;
  await untilSecondAfter(takenBefore, now);
  const notBefore =
    current.tokensNotBefore && current.tokensNotBefore > takenBefore ? current.tokensNotBefore : takenBefore;
  return { ...written, tokens_not_before: notBefore };
}

/**
 * Marks a client first-party, or takes the mark away (the operator's CLI only: no API changes it). The
 * whole client must stay valid (a service client acts by its service scopes, never first-party).
 * `updated_at` moves, so every node's client cache sees the change within seconds: a token of the
 * client then acts with, or without, its users' authority at once, as a token of a client whose `roles`
 * was taken away does. Undefined when there is no such client; a ZodError when the rules refuse it.
 */
export async function setClientFirstParty(
  db: Queryable,
  clientId: string,
  firstParty: boolean,
  now: Date,
): Promise<OAuthClient | undefined> {
  const current = await findClientForUpdate(db, clientId);
  if (!current) return undefined;
  newClientSchema.parse({
    name: current.name,
    type: current.type,
    redirectUris: current.redirectUris,
    postLogoutRedirectUris: current.postLogoutRedirectUris,
    scopes: current.allowedScopes,
    grantTypes: current.grantTypes,
    ownerId: current.ownerId,
    firstParty,
  });
  const [row] = await db<OAuthClientRow>('oauth_clients')
    .where({ client_id: clientId })
    .update({ first_party: firstParty, updated_at: now }, '*');
  announceClientChange(clientId);
  return fromRow(row!);
}

/**
 * The client's row, locked until the transaction ends: a caller judging a change by the client as it
 * is (src/oidc/client-authority.ts) sees the row the change will apply to.
 */
export async function findClientForUpdate(db: Queryable, clientId: string): Promise<OAuthClient | undefined> {
  const row = await db<OAuthClientRow>('oauth_clients').where({ client_id: clientId }).forUpdate().first();
  return row ? fromRow(row) : undefined;
}

/**
 * Enables a disabled client; false if unknown. Its tokens issued before it was disabled stay refused:
 * an access token's `iat` has whole seconds, so enabling waits, if need be, until the second after the
 * disable began has passed; a token issued from then on can't be mistaken for one issued before
 * (refusedByNotBefore).
 */
export async function enableClient(db: Queryable, clientId: string, now: Date): Promise<boolean> {
  const current = await findClientForUpdate(db, clientId);
  if (!current) return false;
  if (current.tokensNotBefore) await untilSecondAfter(current.tokensNotBefore, now);
  const changed = await db('oauth_clients')
    .where({ client_id: clientId })
    .update({ is_active: true, updated_at: now });
  announceClientChange(clientId);
  return changed > 0;
}

/**
 * Resolves once `now` (the service's clock) has passed into a later whole second than `moment`: at
 * most a second, a clock set back meanwhile included.
 */
async function untilSecondAfter(moment: Date, now: Date): Promise<void> {
  const wait = Math.min((Math.floor(moment.getTime() / 1000) + 1) * 1000 - now.getTime(), 1000);
  if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
}

/**
 * Whether an access token (its `iat`, epoch seconds) was issued no later than its client's
 * tokens_not_before (the last disable, or the last scope taken before scopes were given back). A
 * token issued in that same second counts as issued before it (enableClient and scopeChange wait that
 * second out).
 */
export function refusedByNotBefore(
  issuedAt: number | undefined,
  tokensNotBefore: number | undefined,
): boolean {
  if (tokensNotBefore === undefined) return false;
  return issuedAt === undefined || issuedAt <= Math.floor(tokensNotBefore);
}

/**
 * Deletes a client with its codes, consents and refresh tokens (the foreign keys cascade); its access
 * tokens are refused from now on, as their client no longer exists. Returns false if unknown.
 */
export async function deleteClient(db: Queryable, clientId: string): Promise<boolean> {
  const deleted = await deleteClientRow(db, clientId);
  announceClientChange(clientId);
  return deleted;
}

/**
 * The writes of deleteClient, without telling this process's caches: the row goes, and the deletion is
 * recorded for the change feed that other nodes' client caches read (a row that is gone has no
 * updated_at to report). Run it in the caller's transaction.
 */
export async function deleteClientRow(db: Queryable, clientId: string): Promise<boolean> {
  const deleted = await db('oauth_clients').where({ client_id: clientId }).delete();
  if (deleted === 0) return false;
  await db('deleted_oauth_clients')
    .insert({ client_id: clientId, deleted_at: db.fn.now() })
    .onConflict('client_id')
    .merge(['deleted_at']);
  return true;
}

/**
 * Gives a confidential client a new secret (returned once, stored hashed); the old one stops working
 * at once. Undefined when there is no such client; a public client has no secret to rotate (400).
 */
export async function rotateClientSecret(
  db: Queryable,
  clientId: string,
  now: Date,
): Promise<{ client: OAuthClient; clientSecret: string } | undefined> {
  const current = await findClientForUpdate(db, clientId);
  if (!current) return undefined;
  if (current.type !== 'confidential') {
    throw new ApiError(400, 'invalid_request', 'A public client has no secret to rotate.');
  }
  const clientSecret = randomSecret(32);
  const [row] = await db<OAuthClientRow>('oauth_clients')
    .where({ client_id: clientId })
    .update({ client_secret_hash: hashClientSecret(clientSecret), updated_at: now }, '*');
  announceClientChange(clientId);
  return { client: fromRow(row!), clientSecret };
}

/**
 * Tells this process's client caches that a client changed (and, in a cluster, its siblings':
 * worker-notices.ts). The model's writers already do, but inside a transaction a cache could read the
 * old row again before the commit: callers that change clients in a transaction call this once more
 * after it.
 */
export function announceClientChange(clientId: string): void {
  clientChanges.emit('change', clientId);
}
