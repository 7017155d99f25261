import { errors, type KoaContextWithOIDC, type Provider } from 'oidc-provider';
import {
  grantType,
  handler as engineAuthorizationCodeGrant,
  parameters,
} from 'oidc-provider/lib/actions/grants/authorization_code.js';
import * as grantHelpers from 'oidc-provider/lib/helpers/grants.js';
import checkPKCE from 'oidc-provider/lib/helpers/pkce.js';

/**
 * The authorization_code grant, refusing a code whose redirect_uri the client no longer has. The engine
 * compares the token request's redirect_uri with the code's only (RFC 6749 §4.1.3), so a code sent to a
 * URI an administrator then took from the client (a lapsed domain, an attacker's address) stayed
 * redeemable for its 10 minutes by whoever received it there, with the PKCE verifier they chose. The
 * URI the request names is the code's (the engine checks that next), so it is checked against the
 * client as it is now: no longer registered, `invalid_grant`, nothing issued, the code left unused.
 * The same check as the resume of an authorization (actions/authorize-resume.ts) and as authorize.
 *
 * A code redeemed once and presented again is the engine's sign of a stolen code: it revokes the
 * grant the first redemption made (RFC 6749 §4.1.2). That holds here too: a second presentation that
 * would have passed the engine's checks (this client's code, its redirect_uri, its PKCE verifier)
 * revokes the grant before the refusal.
 */
export function installRegisteredRedirectAtRedemption(provider: Provider): void {
  const helpers = Object.fromEntries(
    Object.entries(grantHelpers).map(([name, helper]) => [
      name,
      (helper as (...args: unknown[]) => unknown).bind(undefined, provider),
    ]),
  );
  async function authorizationCodeGrant(ctx: KoaContextWithOIDC) {
    const redirectUri = ctx.oidc.params?.redirect_uri;
    if (typeof redirectUri === 'string' && !ctx.oidc.client!.redirectUriAllowed(redirectUri)) {
      await revokeIfPresentedAgain(ctx, redirectUri);
      throw new errors.InvalidGrant('the redirect_uri is no longer registered for this client');
    }
    await engineAuthorizationCodeGrant(provider, helpers, ctx);
  }
  /** The engine's own answer to a consumed code (helpers' consumeGrantSource: revoke, then refuse). */
  async function revokeIfPresentedAgain(ctx: KoaContextWithOIDC, redirectUri: string): Promise<void> {
    const { code: value, code_verifier: verifier } = ctx.oidc.params ?? {};
    if (typeof value !== 'string') return;
    const code = (await provider.AuthorizationCode.find(value, { ignoreExpiration: true })) as
      (InstanceType<Provider['AuthorizationCode']> & { consumed?: number }) | undefined;
    if (!code?.consumed || code.clientId !== ctx.oidc.client!.clientId || code.redirectUri !== redirectUri) {
      return;
    }
    try {
      checkPKCE(verifier, code.codeChallenge, code.codeChallengeMethod);
    } catch {
      return;
    }
    await helpers.consumeGrantSource!(ctx, code, 'authorization code');
  }
  // As the engine registers it with resource indicators enabled (lib/helpers/initialize_app.js).
  provider.registerGrantType(grantType, authorizationCodeGrant, [...parameters, 'resource'], ['resource']);
}
