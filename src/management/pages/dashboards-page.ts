import Router from '@koa/router';
import { Messages } from '../../i18n/messages.js';
import { publicPath } from '../../http/base-path.js';
import { renderPage } from '../../http/pages.js';

const languagePattern = /^[a-z]{2}(-[A-Za-z]{2,4})?$/;

/** The messages the page's script needs (labels of tables, charts, states). */
const clientMessageIds = [
  'revenue',
  'refunds',
  'netRevenue',
  'failedPayments',
  'invoicesIssued',
  'invoicesPaid',
  'invoicesOverdue',
  'invoicesOpen',
  'approved',
  'paid',
  'received',
  'refunded',
  'payoutsPaid',
  'net',
  'outstanding',
  'overdue',
  'source',
  'owner',
  'leads',
  'dealsCreated',
  'dealsWon',
  'dealsLost',
  'wonAmount',
  'conversion',
  'total',
  'noData',
  'loading',
  'failed',
  'matched',
  'differs',
  'noSnapshot',
  'stale',
  'fresh',
  'notConfigured',
  'figure',
  'consumer',
  'snapshot',
  'difference',
  'month',
  'currency',
  'reconciliationSales',
  'reconciliationBalance',
  'reconciliationPayouts',
];

/**
 * GET /:lang/management/dashboards: the finance, marketing and sales dashboards as tables and charts.
 * The page itself holds no data: its script gets an access token the way the service's own pages do
 * (POST /api/v2/identity/auth/refresh with the httpOnly refresh cookie, same site) and calls the
 * dashboard API with it. The charting library (Chart.js) is served from our assets, as the script is:
 * the page's Content-Security-Policy allows no other origin and no inline script.
 */
export function dashboardsPageRoutes(messages = Messages.load()): Router {
  const router = new Router();
  router.get('/:lang/management/dashboards', (ctx) => {
    if (!languagePattern.test(ctx.params.lang!)) return;
    const lang = messages.pick(ctx.params.lang);
    const t = messages.in(lang);
    // `{time}` and `{month}` stay placeholders the script fills in.
    const clientMessages = Object.fromEntries(
      clientMessageIds.map((id) => [id, t(`management.${id}`, { time: '{time}', month: '{month}' })]),
    );
    renderPage(ctx, 'management-dashboards', {
      lang,
      t: (id: string, values?: Record<string, string | number>) => t(`management.${id}`, values),
      clientMessages: JSON.stringify(clientMessages),
      signInUrl: publicPath(
        ctx,
        // A path of the service, without the issuer's: the sign-in page adds it (interaction.ts).
        `/${lang}/auth?return_to=${encodeURIComponent(`/${lang}/management/dashboards`)}`,
      ),
      languages: messages.languages.map((code) => ({
        code,
        name: messages.format(code, 'common.language.name'),
        href: publicPath(ctx, `/${code}/management/dashboards`),
      })),
    });
  });
  return router;
}
