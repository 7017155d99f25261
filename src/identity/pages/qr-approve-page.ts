import Router from '@koa/router';
import { renderPage } from '../../http/pages.js';
import { qrApprovePath } from '../auth-flow/steps/qr.js';

/** GET /qr-approve.html: where a scanned QR code leads (static; its script does the rest). */
export function qrApprovePageRoutes(): Router {
  const router = new Router();
  router.get(qrApprovePath, (ctx) => {
    renderPage(ctx, 'qr-approve', {});
  });
  return router;
}
