import Router from '@koa/router';
import { oauthRoutes } from '../provider.js';
import { ssoCodeGrantType } from '../sso/sso-clients.js';

/** OpenID Connect Discovery 1.0, and RFC 8414's document for OAuth clients: the same document. */
const discoveryPaths = ['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server'];

interface DiscoveryDocument {
  grant_types_supported?: string[];
  token_endpoint_auth_methods_supported?: string[];
  [field: string]: unknown;
}

/**
 * The discovery documents: the engine builds each (it is the source of truth); this keeps the first
 * answer, corrected, and serves it as is afterwards. A document only changes with the configuration,
 * i.e. at a restart. It is the most requested address of an identity provider. Corrections:
 *
 * - the inbound-SSO grant is left out of grant_types_supported: only clients told about it
 *   (docs/inbound-sso.md) use it;
 * - how introspection and revocation authenticate clients, which the engine leaves out (RFC 8414 §2:
 *   left out means client_secret_basic only). Our introspection takes Basic alone; revocation is the
 *   engine's and takes what the token endpoint takes, `none` included (a public client revokes its own
 *   refresh token);
 * - the engine's endpoint addresses, which it builds from the request's Host (and, behind TRUST_PROXY,
 *   X-Forwarded-Host and -Proto): they are the issuer's. The first answer is kept for everyone, so a
 *   first request after a start with a forged Host made every relying party send its users, codes and
 *   secrets to that host and take its keys from there. A document that still names another address
 *   is served to that request only, never kept.
 */
export function discoveryRoutes(issuer: string): Router {
  const router = new Router();
  const cached = new Map<string, string>();
  for (const path of discoveryPaths) {
    router.get(path, async (ctx, next) => {
      const document = cached.get(path);
      if (document) {
        ctx.set('Access-Control-Allow-Origin', '*');
        ctx.set('Cache-Control', 'public, max-age=300');
        ctx.type = 'application/json';
        ctx.body = document;
        return;
      }
      await next();
      if (ctx.status === 200 && ctx.body && typeof ctx.body === 'object') {
        const document = corrected(ctx.body as DiscoveryDocument, issuer);
        ctx.body = document;
        if (onlyAt(document, issuer)) cached.set(path, JSON.stringify(document));
      }
    });
  }
  return router;
}

/** The endpoints whose addresses the engine builds from the request (ctx.oidc.urlFor), by route. */
const requestBuiltEndpoints = {
  authorization_endpoint: oauthRoutes.authorization,
  token_endpoint: oauthRoutes.token,
  jwks_uri: oauthRoutes.jwks,
  end_session_endpoint: oauthRoutes.end_session,
  revocation_endpoint: oauthRoutes.revocation,
} as const;

/** Whether every address in the document is under the issuer. */
function onlyAt(document: DiscoveryDocument, issuer: string): boolean {
  return Object.values(document).every(
    (value) =>
      typeof value !== 'string' || !/^[a-z][a-z0-9+.-]*:\/\//i.test(value) || underIssuer(value, issuer),
  );
}

function underIssuer(address: string, issuer: string): boolean {
  return address === issuer || address.startsWith(`${issuer}/`);
}

function corrected(document: DiscoveryDocument, issuer: string): DiscoveryDocument {
  for (const [field, path] of Object.entries(requestBuiltEndpoints)) {
    if (typeof document[field] === 'string') document[field] = `${issuer}${path}`;
  }
  document.grant_types_supported = document.grant_types_supported?.filter(
    (grant) => grant !== ssoCodeGrantType,
  );
  document.introspection_endpoint_auth_methods_supported = ['client_secret_basic'];
  document.revocation_endpoint_auth_methods_supported = document.token_endpoint_auth_methods_supported;
  return document;
}
