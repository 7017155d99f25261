import type { OAuthClient } from '../models/oauth-client.js';

/**
 * The grant type a client exchanges an inbound-SSO one-time code with at POST /oauth/token (an
 * extension grant, RFC 6749 §4.5: an absolute URI of our own).
 */
export const ssoCodeGrantType = 'urn:identity-service:grant-type:sso-otc';

/**
 * Which clients take signed-in users by one-time code: active confidential clients of user flows
 * (authorization_code). The exchange is client-authenticated, which a public client can't be.
 */
export function acceptsSsoCodes(client: Pick<OAuthClient, 'type' | 'grantTypes' | 'isActive'>): boolean {
  return (
    client.isActive && client.type === 'confidential' && client.grantTypes.includes('authorization_code')
  );
}
