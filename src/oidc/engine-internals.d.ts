/**
 * The engine's internal helpers we build on (oidc-provider v9 ships no types for them). An engine
 * upgrade reviews these first: they are not its public API. Used by the inbound-SSO grant
 * (src/oidc/sso/sso-code-grant.ts) to issue tokens exactly as the engine's own grants do.
 */
declare module 'oidc-provider/lib/helpers/grants.js' {
  const helpers: Record<string, (...args: unknown[]) => unknown>;
  export = helpers;
}

declare module 'oidc-provider/lib/helpers/grant_common.js' {
  export function issueTokens(
    provider: unknown,
    helpers: Record<string, (...args: unknown[]) => unknown>,
    ctx: unknown,
    source: Record<string, unknown>,
    grant: unknown,
    options: { gty: string; entityLabel: string; cert?: unknown; dPoP?: unknown },
  ): Promise<void>;
}

/**
 * The engine's AsyncLocalStorage, whose store is the request's Koa context (its `Provider.ctx`). The
 * request context of src/http/request-context.ts lives in it too: on Node 20 every promise pays for
 * each AsyncLocalStorage in use, and the engine's always is.
 */
declare module 'oidc-provider/lib/helpers/als.js' {
  import type { AsyncLocalStorage } from 'node:async_hooks';
  const requests: AsyncLocalStorage<object>;
  export default requests;
}

/** The engine's PKCE check of a code's redemption: throws InvalidGrant when the verifier doesn't match. */
declare module 'oidc-provider/lib/helpers/pkce.js' {
  export default function checkPKCE(verifier: unknown, challenge: unknown, method: unknown): void;
}

/**
 * The engine's authorization_code grant, which src/oidc/registered-redirect-at-redemption.ts registers
 * again behind one more check (the handler takes the provider and the bound grant helpers first).
 */
declare module 'oidc-provider/lib/actions/grants/authorization_code.js' {
  export const handler: (
    provider: unknown,
    helpers: Record<string, (...args: unknown[]) => unknown>,
    ctx: unknown,
  ) => Promise<void>;
  export const parameters: Set<string>;
  export const grantType: string;
}
