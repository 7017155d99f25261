import Router from '@koa/router';
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
 *   refresh token).
 */
export function discoveryRoutes(): Router {
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
        cached.set(path, JSON.stringify(corrected(ctx.body as DiscoveryDocument)));
      }
    });
  }
  return router;
}

function corrected(document: DiscoveryDocument): DiscoveryDocument {
  document.grant_types_supported = document.grant_types_supported?.filter(
    (grant) => grant !== ssoCodeGrantType,
  );
  document.introspection_endpoint_auth_methods_supported = ['client_secret_basic'];
  document.revocation_endpoint_auth_methods_supported = document.token_endpoint_auth_methods_supported;
  return document;
}
