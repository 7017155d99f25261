import Router from '@koa/router';
import { publicPath } from '../http/base-path.js';
import { renderPage } from '../http/pages.js';
import { Messages } from '../i18n/messages.js';
import { grantTypes } from '../oidc/models/oauth-client.js';

const languagePattern = /^[a-z]{2}(-[A-Za-z]{2,4})?$/;

/** The messages the page's script needs (rows, buttons, confirmations, outcomes). */
const clientMessageIds = [
  'active',
  'disabled',
  'edit',
  'disable',
  'enable',
  'delete',
  'rotateSecret',
  'editTitle',
  'confirmDelete',
  'confirmRotate',
  'secretNotice',
  'none',
  'count',
  'created',
  'saved',
  'deleted',
  'invalid',
  'notAllowed',
  'failed',
];

/**
 * GET /:lang/admin/oauth-clients: the administrators' table of OAuth clients (name, client_id, status,
 * creation date) with create (the secret shown once), edit, disable/enable, rotate secret and delete.
 * The page holds no data: its script gets an access token the way the service's own pages do (POST
 * /api/v2/identity/auth/refresh with the httpOnly refresh cookie, same site) and calls the admin API,
 * which checks the permission and the recent sign-in. No inline script (the CSP allows none).
 */
export function oauthClientsPageRoutes(messages = Messages.load()): Router {
  const router = new Router();
  router.get('/:lang/admin/oauth-clients', (ctx) => {
    if (!languagePattern.test(ctx.params.lang!)) return;
    const lang = messages.pick(ctx.params.lang);
    const t = messages.in(lang);
    // `{name}`-style placeholders stay for the script to fill in.
    const placeholders = {
      name: '{name}',
      problems: '{problems}',
      reason: '{reason}',
      shown: '{shown}',
      total: '{total}',
    };
    const clientMessages = Object.fromEntries(
      clientMessageIds.map((id) => [id, t(`admin.${id}`, placeholders)]),
    );
    const pagePath = `/${lang}/admin/oauth-clients`;
    renderPage(ctx, 'admin-oauth-clients', {
      lang,
      t: (id: string, values?: Record<string, string | number>) => t(`admin.${id}`, values),
      clientMessages: JSON.stringify(clientMessages),
      grantTypes,
      // return_to is a path of the service, without the issuer's: the sign-in page adds it (interaction.ts).
      signInUrl: publicPath(ctx, `/${lang}/auth?return_to=${encodeURIComponent(pagePath)}`),
      languages: messages.languages.map((code) => ({
        code,
        name: messages.format(code, 'common.language.name'),
        href: publicPath(ctx, `/${code}/admin/oauth-clients`),
      })),
    });
  });
  return router;
}
