import { Provider, type AdapterPayload } from 'oidc-provider';
import type { Account } from '../../src/oidc/account-claims.js';

/**
 * Rows read ahead for the engine, kept for the rest of one request.
 *
 * The refresh_token grant asks for the refresh token, then for its Grant, then for its account
 * (findAccount): three round trips, one after the other. RefreshTokenAdapter.find reads all three in
 * one statement and leaves the Grant and the account here. The rate limits in front of the engine
 * read it even earlier (a public client's refresh token proves the request is the client's,
 * client-rate-limits.ts) and leave the token here too. Each is taken once: a second read in the same
 * request goes to the database again, so nothing written meanwhile is missed.
 */
interface Prefetched {
  refreshTokens: Map<string, AdapterPayload | undefined>;
  grants: Map<string, AdapterPayload | undefined>;
  accounts: Map<string, Account | undefined>;
}

const byRequest = new WeakMap<object, Prefetched>();

function prefetchedOfThisRequest(create: boolean): Prefetched | undefined {
  const context = Provider.ctx;
  if (!context) return undefined;
  let prefetched = byRequest.get(context);
  if (!prefetched && create) {
    prefetched = { refreshTokens: new Map(), grants: new Map(), accounts: new Map() };
    byRequest.set(context, prefetched);
  }
  return prefetched;
}

/** Whether the current request is a refresh_token grant (the one that reads token, grant and account). */
export function isRefreshTokenGrant(): boolean {
  const oidc = Provider.ctx?.oidc;
  return oidc?.route === 'token' && oidc.params?.grant_type === 'refresh_token';
}

/** `undefined` records that the token is not there (unknown, or revoked other than by rotation). */
export function keepRefreshToken(token: string, payload: AdapterPayload | undefined): void {
  prefetchedOfThisRequest(true)?.refreshTokens.set(token, payload);
}

export function takeRefreshToken(token: string): { found: AdapterPayload | undefined } | undefined {
  return take(prefetchedOfThisRequest(false)?.refreshTokens, token);
}

/** `undefined` records that the row does not exist (an expired grant, a disabled user). */
export function keepGrant(grantId: string, payload: AdapterPayload | undefined): void {
  prefetchedOfThisRequest(true)?.grants.set(grantId, payload);
}

export function keepAccount(accountId: string, account: Account | undefined): void {
  prefetchedOfThisRequest(true)?.accounts.set(accountId, account);
}

/** `{ found }` when this request read the grant ahead (found may be undefined: no such grant). */
export function takeGrant(grantId: string): { found: AdapterPayload | undefined } | undefined {
  return take(prefetchedOfThisRequest(false)?.grants, grantId);
}

export function takeAccount(accountId: string): { found: Account | undefined } | undefined {
  return take(prefetchedOfThisRequest(false)?.accounts, accountId);
}

function take<T>(rows: Map<string, T> | undefined, id: string): { found: T } | undefined {
  if (!rows?.has(id)) return undefined;
  const found = rows.get(id) as T;
  rows.delete(id);
  return { found };
}
