import type Router from '@koa/router';
import type { Provider } from 'oidc-provider';
import { z } from 'zod';
import type { Clock } from '../../clock.js';
import type { Database } from '../../db/database.js';
import { ApiError } from '../../http/api-error.js';
import { jsonApiRouter } from '../../http/json-api.js';
import type { Logger } from '../../logger.js';
import { InvalidAccessTokenError } from '../../tokens/oauth-access-token.js';
import { confirmStanding, verifySignedToken, type TokenVerification } from '../../tokens/principal.js';
import { authenticateClientWithBasic } from '../client-authentication.js';
import { isFirstParty } from '../client-metadata.js';
import { OAuthError } from '../oauth-error.js';
import { sessionThatStartedGrant } from '../models/session-started-grants.js';
import {
  inboundLoginTokenLifetimeSeconds,
  storeInboundLoginToken,
} from '../../identity/sessions/inbound-login-tokens.js';

const inboundRequest = z.strictObject({ access_token: z.string().min(1).max(8192) });

/**
 * POST /oauth/sso/inbound (docs/inbound-sso.md): a first-party confidential client (HTTP Basic) that
 * holds a user's access token (issued to that same client, still live) gets a one-time login token for
 * /inbound-login.html, which signs the person in to this service without a password. 201
 * { login_token, expires_in, login_url }. The client's secret is what makes a token: a person can't
 * mint one for their own account and sign someone else's browser in with it (login CSRF).
 */
export function ssoInboundRoutes(deps: {
  db: Database;
  clock: Clock;
  provider: Provider;
  tokenVerification: TokenVerification;
  logger: Logger;
}): Router {
  const router = jsonApiRouter('/oauth/sso', deps.logger);
  router.post('/inbound', async (ctx) => {
    const client = await authenticateClientWithBasic(ctx, deps.provider).catch((error: unknown) => {
      if (error instanceof OAuthError) {
        throw new ApiError(401, 'invalid_client', error.description, undefined, error.headers);
      }
      throw error;
    });
    if (!isFirstParty(client as never)) {
      throw new ApiError(
        403,
        'forbidden',
        'Only a client an administrator marked first-party may sign users in to this service.',
      );
    }
    const body = inboundRequest.parse(ctx.request.body ?? {});
    let userId: string;
    let authTime: Date;
    let grantId: string | undefined;
    try {
      const principal = await confirmStanding(
        await verifySignedToken(body.access_token, deps.tokenVerification, ['oauth-user']),
        deps.tokenVerification,
      );
      if (principal.kind !== 'user' || principal.clientId !== client.clientId) {
        throw new InvalidAccessTokenError('the access token was not issued to this client');
      }
      // The session this starts inherits the token's authentication time: inbound SSO proves nothing
      // new about who holds the browser, so it must not pass for a fresh authentication.
      if (principal.authTime === undefined) {
        throw new InvalidAccessTokenError('the access token does not say when its user authenticated');
      }
      // The session this starts is the user's own sign-in to this service: it acts with all their roles
      // and permissions. Only a token that carries that authority may become one (its client is
      // first-party, and the user granted it `roles`, still allowed): a token granted `openid` lets
      // the application know who the user is, not administer the service as them.
      if (!principal.hasUserAuthority) {
        throw new ApiError(
          403,
          'insufficient_scope',
          'The access token was not granted the roles scope: it does not carry the user’s authority, ' +
            'which a session of this service would.',
          { scope: 'roles' },
        );
      }
      userId = principal.userId;
      authTime = new Date(principal.authTime * 1000);
      grantId = principal.grantId;
    } catch (error) {
      if (error instanceof InvalidAccessTokenError) {
        throw new ApiError(400, 'invalid_token', 'The access token is not a live user token of this client.');
      }
      throw error;
    }
    const now = deps.clock.now();
    // A grant made from a main-auth session (a one-time SSO code it asked for, a browser its QR approval
    // signed in) ends with that session, and so must the session this token starts: a thief with a
    // copied access token could otherwise trade it, through the application and its inbound SSO, for a
    // session that outlives the owner's logout or revocation of the copied one.
    const startedBySessionId = grantId ? await sessionThatStartedGrant(deps.db, grantId) : undefined;
    const { token } = await storeInboundLoginToken(
      deps.db,
      // And every session it starts ends when the grant is revoked (endSessionsFromGrants): ending that
      // sign-in to the application must not leave whoever copied its access token a session here.
      { userId, clientId: client.clientId, authTime, startedBySessionId, grantId },
      now,
    );
    ctx.status = 201;
    // A credential, as a token response is (RFC 6749 §5.1): never kept by a cache on the way.
    ctx.set('Cache-Control', 'no-store');
    ctx.body = {
      login_token: token,
      expires_in: inboundLoginTokenLifetimeSeconds,
      login_url: `${deps.tokenVerification.issuer}/inbound-login.html#${new URLSearchParams({ login_token: token })}`,
    };
  });
  return router;
}
