import type { Context } from 'koa';

/**
 * The name of the engine's session cookie, set in its configuration (provider.ts) so that what reads
 * it outside the engine can't drift from what the engine writes.
 */
export const engineSessionCookieName = '_session';

/**
 * The id of the engine's session this browser holds (its row in oidc_payloads), or undefined. The
 * engine signs the cookie with the cookie keys the service's app shares (a host app must have them
 * too), so a value this service did not set fails its signature and is not read.
 */
export function readEngineSessionId(ctx: Context): string | undefined {
  return ctx.cookies.get(engineSessionCookieName, { signed: true }) || undefined;
}
