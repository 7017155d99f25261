import type { KoaContextWithOIDC, Provider } from 'oidc-provider';
import { errors } from 'oidc-provider';
import * as grantHelpers from 'oidc-provider/lib/helpers/grants.js';
import { issueTokens } from 'oidc-provider/lib/helpers/grant_common.js';
import type { Clock } from '../../clock.js';
import type { Database } from '../../db/database.js';
import { splitScope } from '../scopes.js';
import { isFirstParty } from '../client-metadata.js';
import { consentStillGiven } from '../models/consent.js';
import { scopesConsentedForCode } from './consented-code-scopes.js';
import { ssoCodeGrantType } from './sso-clients.js';
import { redeemSsoCode } from './sso-code-records.js';
import { recordGrantStartedBy } from '../models/session-started-grants.js';

/**
 * Registers the inbound-SSO exchange as a grant of the token endpoint, so the engine does what it does
 * for every grant: client authentication (confidential clients only, see clientMetadata), the per-client
 * rate limit (client-rate-limits.ts), the answer shape and errors of RFC 6749. The code is redeemed
 * (single use, constant-time, attempts bounded: sso-code-records.ts); then a Grant is created for the
 * user and the client with the scopes the user handed over, and the tokens are issued by the engine's
 * own issueTokens, as for an authorization code: created now, never stored with the code.
 */
/** Where the grant leaves the redeemed code's authentication time for the token claims. */
export const ssoCodeEntity = 'SsoCode';

/** The authentication time of the one-time code this request redeemed, if it redeemed one. */
export function ssoCodeAuthTime(ctx: KoaContextWithOIDC): number | undefined {
  const entity = (ctx.oidc.entities as Record<string, unknown>)[ssoCodeEntity] as
    { authTime?: number } | undefined;
  return entity?.authTime;
}

export function installSsoCodeGrant(
  provider: Provider,
  deps: { db: Database; clock: Clock; apiAudience: string },
): void {
  const helpers = Object.fromEntries(
    Object.entries(grantHelpers).map(([name, helper]) => [
      name,
      (helper as (...args: unknown[]) => unknown).bind(undefined, provider),
    ]),
  );
  async function exchangeSsoCode(ctx: KoaContextWithOIDC) {
    const code = ctx.oidc.params!.code;
    if (typeof code !== 'string' || code === '') {
      throw new errors.InvalidRequest("missing required parameter 'code'");
    }
    const client = ctx.oidc.client!;
    const redeemed = await redeemSsoCode(deps.db, { clientId: client.clientId, code }, deps.clock.now());
    if (!redeemed) throw new errors.InvalidGrant('the code is wrong, expired or already used');

    // The consent may have been withdrawn since the code was made: the tokens carry only what is
    // consented now (and nothing without openid), as the code carried only what was consented then.
    const firstParty = isFirstParty(client as never);
    const scopes = await scopesConsentedForCode(
      deps.db,
      { userId: redeemed.userId, clientId: client.clientId, firstParty },
      splitScope(redeemed.scope),
    );
    if (!scopes.includes('openid'))
      throw new errors.InvalidGrant('the user no longer consents to this client');
    const grant = new provider.Grant({ accountId: redeemed.userId, clientId: client.clientId });
    grant.addOIDCScope(scopes.join(' '));
    grant.addResourceScope(deps.apiAudience, scopes.join(' '));
    const grantId = await grant.save();
    // A withdrawal racing this deletes the consent, then the client's grants: one that ran after the
    // consent was read above but before this grant was saved left it, and the client kept 30 days of
    // refresh tokens after the consent was withdrawn. Read again, waiting for a withdrawal in flight;
    // gone, so is this grant (as at authorize, load-existing-grant.ts).
    if (!firstParty && !(await consentStillGiven(deps.db, redeemed.userId, client.clientId))) {
      await grant.destroy();
      throw new errors.InvalidGrant('the user no longer consents to this client');
    }
    // The grant ends with the session that asked for the code (a logout, a revocation): recorded
    // before the tokens, and refused if that session ended since the code was redeemed.
    if (
      redeemed.sessionId &&
      !(await recordGrantStartedBy(deps.db, grantId, redeemed.sessionId, deps.clock.now()))
    ) {
      throw new errors.InvalidGrant('the session that asked for the code has ended');
    }
    const source = {
      accountId: redeemed.userId,
      grantId,
      scope: scopes.join(' '),
      scopes: new Set(scopes),
      resource: deps.apiAudience,
      resourceIndicators: new Set([deps.apiAudience]),
      // As at authorize for our clients (require_auth_time): the ID token says when the user signed in.
      claims: { id_token: { auth_time: { essential: true } } },
      // When the user last authenticated before asking for the code: asking is no authentication.
      authTime: Math.floor(redeemed.authTime.getTime() / 1000),
      expiresWithSession: false,
    };
    ctx.oidc.entity('Grant', grant);
    // The access token issued now reads its auth_time here (extraTokenClaims in provider.ts).
    ctx.oidc.entity(ssoCodeEntity, { authTime: source.authTime });
    await issueTokens(provider, helpers, ctx, source, grant, {
      gty: ssoCodeGrantType,
      entityLabel: 'one-time code',
    });
  }
  provider.registerGrantType(ssoCodeGrantType, exchangeSsoCode, ['code', 'resource'], ['resource']);
}
