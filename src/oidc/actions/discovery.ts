import Router from '@koa/router';
import { ssoCodeGrantType } from '../sso/sso-clients.js';

const discoveryPath = '/.well-known/openid-configuration';

/**
 * GET /.well-known/openid-configuration: the engine builds the document (it is the source of truth);
 * this keeps the first answer and serves it as is afterwards. The document only changes with the
 * configuration, i.e. at a restart. It is the most requested address of an identity provider.
 * The inbound-SSO grant is left out of grant_types_supported: the spec's list is the public contract,
 * and only clients told about the grant (docs/inbound-sso.md) use it.
 */
export function discoveryRoutes(): Router {
  const router = new Router();
  let cached: string | undefined;
  router.get(discoveryPath, async (ctx, next) => {
    if (cached) {
      ctx.set('Access-Control-Allow-Origin', '*');
      ctx.set('Cache-Control', 'public, max-age=300');
      ctx.type = 'application/json';
      ctx.body = cached;
      return;
    }
    await next();
    if (ctx.status === 200 && ctx.body && typeof ctx.body === 'object') {
      const document = ctx.body as { grant_types_supported?: string[] };
      document.grant_types_supported = document.grant_types_supported?.filter(
        (grant) => grant !== ssoCodeGrantType,
      );
      cached = JSON.stringify(document);
    }
  });
  return router;
}
