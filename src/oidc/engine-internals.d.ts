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
