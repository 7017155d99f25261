import Router from '@koa/router';
import type { Context } from 'koa';
import { errors, type Provider } from 'oidc-provider';
import { ApiError } from '../../http/api-error.js';
import { renderErrorPage } from '../../http/error-handler.js';
import { oauthRoutes } from '../provider.js';

/**
 * GET /oauth/authorize/:uid, in front of the engine's resume of an authorization after its sign-in
 * and consent pages. The engine checks the redirect_uri against the client's list at /oauth/authorize
 * only; the resume answers to the redirect_uri stored with the interaction, as it was then. An
 * administrator who takes a URI from the client (a lapsed domain, an attacker's address) meanwhile
 * would see a code, or an error with the state, still sent there for as long as an interaction lives
 * (RFC 9700 §4.1: only registered URIs). So the stored redirect_uri is checked again here, against the
 * client as it is now: no longer registered, the interaction ends on an error page, never a redirect,
 * as at /oauth/authorize. A client that is gone or disabled is left to the engine, which refuses it.
 */
export function authorizeResumeRoutes(provider: Provider): Router {
  const router = new Router();
  router.get(`${oauthRoutes.authorization}/:uid`, async (ctx, next) => {
    for (const uid of interactionIdsOf(ctx, provider)) {
      const interaction = await provider.Interaction.find(uid);
      if (interaction && !(await redirectUriStillRegistered(provider, interaction.params))) {
        await interaction.destroy();
        renderErrorPage(
          ctx,
          new ApiError(
            400,
            'invalid_redirect_uri',
            'The redirect_uri of this authorization is no longer registered for the application.',
          ),
        );
        return;
      }
    }
    await next();
  });
  return router;
}

/**
 * The interactions this request may resume: the engine resumes the one its resume cookie names
 * (signed, with the engine's keys, which are the service's); the path names one too.
 */
function interactionIdsOf(ctx: Context, provider: Provider): string[] {
  const fromCookie = ctx.cookies.get(provider.cookieName('resume'), { signed: true });
  return [...new Set([ctx.params.uid, fromCookie].filter((id): id is string => Boolean(id)))];
}

async function redirectUriStillRegistered(
  provider: Provider,
  params: Record<string, unknown>,
): Promise<boolean> {
  const { client_id: clientId, redirect_uri: redirectUri } = params;
  if (typeof clientId !== 'string' || typeof redirectUri !== 'string') return true;
  let client;
  try {
    client = await provider.Client.find(clientId);
  } catch (error) {
    // Stored metadata the engine refuses: the engine's resume refuses the client too.
    if (error instanceof errors.OIDCProviderError) return true;
    throw error;
  }
  return !client || client.redirectUriAllowed(redirectUri);
}
