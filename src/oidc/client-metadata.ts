import type { OAuthClient } from './models/oauth-client.js';
import { applicationTypeOf } from './redirect-uri.js';
import { acceptsSsoCodes, ssoCodeGrantType } from './sso/sso-clients.js';

/** Name of our extra client metadata holding the client's allowed scopes (OIDC and service scopes). */
export const allowedScopesMetadata = 'allowed_scopes';
/** Name of our extra client metadata saying an administrator marked the client first-party. */
export const firstPartyMetadata = 'first_party';
/**
 * Name of our extra client metadata: access tokens issued until then are refused, epoch seconds (the
 * client's tokens_not_before: its last disable, or a scope taken before scopes were given back).
 */
export const tokensNotBeforeMetadata = 'tokens_not_before';

/**
 * The engine's view of one of our clients. Public clients authenticate with `none` (PKCE); confidential
 * ones with their secret, by Basic or in the body (the engine accepts both for client_secret_basic).
 * `client_secret` carries the stored hash: `compareClientSecret` is overridden to hash what the client
 * presents (see client-secret.ts). OIDC `scope` metadata is left unset on purpose: requested scopes
 * are filtered against allowed_scopes instead of rejected (spec: authorize).
 */
export function clientMetadata(client: OAuthClient): Record<string, unknown> {
  const userFlow = client.grantTypes.includes('authorization_code');
  return {
    client_id: client.clientId,
    client_name: client.name,
    ...(client.type === 'confidential'
      ? { client_secret: client.clientSecretHash, token_endpoint_auth_method: 'client_secret_basic' }
      : { token_endpoint_auth_method: 'none' }),
    // Clients that take users by inbound-SSO code exchange it as a grant (docs/inbound-sso.md).
    grant_types: acceptsSsoCodes(client) ? [...client.grantTypes, ssoCodeGrantType] : client.grantTypes,
    response_types: userFlow ? ['code'] : [],
    redirect_uris: client.redirectUris,
    post_logout_redirect_uris: client.postLogoutRedirectUris,
    // The spec's id_token always carries auth_time.
    require_auth_time: true,
    application_type: applicationTypeOf(client.redirectUris),
    [allowedScopesMetadata]: client.allowedScopes,
    [firstPartyMetadata]: client.firstParty,
    ...(client.tokensNotBefore ? { [tokensNotBeforeMetadata]: client.tokensNotBefore.getTime() / 1000 } : {}),
  };
}

/** The scopes a client may receive, from the engine's client object. */
export function allowedScopesOf(client: { [key: string]: unknown }): string[] {
  const scopes = client[allowedScopesMetadata] ?? client.allowedScopes;
  return Array.isArray(scopes) ? (scopes as string[]) : [];
}

/** Whether the engine's client object is of a client an administrator marked first-party. */
export function isFirstParty(client: { [key: string]: unknown }): boolean {
  return (client[firstPartyMetadata] ?? client.firstParty) === true;
}

/** The engine's client object's tokens_not_before, epoch seconds; undefined if it has none. */
export function tokensNotBeforeOf(client: { [key: string]: unknown }): number | undefined {
  const value = client[tokensNotBeforeMetadata];
  return typeof value === 'number' ? value : undefined;
}
