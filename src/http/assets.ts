import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import Router from '@koa/router';
import { viewsDirectory } from './pages.js';

const contentTypes: Record<string, string> = { '.css': 'text/css', '.js': 'text/javascript' };

/** Browser builds of npm packages our pages use, served as /assets/vendor/<name> (no CDN: CSP 'self'). */
const vendorFiles: Record<string, () => string> = {
  // Chart.js's UMD build (the package's exports don't list it: found beside its main entry).
  'chart.umd.min.js': () =>
    path.join(path.dirname(createRequire(import.meta.url).resolve('chart.js')), 'chart.umd.min.js'),
};

/** GET /assets/<file>: the static files of our pages (views/assets), and /assets/vendor/<file>, read once at start. */
export function assetRoutes(): Router {
  const directory = path.join(viewsDirectory, 'assets');
  const files = new Map(
    fs
      .readdirSync(directory)
      .filter((file) => path.extname(file) in contentTypes)
      .map((file) => [file, fs.readFileSync(path.join(directory, file))]),
  );
  const vendor = new Map(
    Object.entries(vendorFiles).map(([name, locate]) => [name, fs.readFileSync(locate())]),
  );
  // One route per file, none for other names: a host app mounting the service keeps the rest of /assets.
  const router = new Router();
  for (const [name, file] of vendor) {
    router.get(`/assets/vendor/${name}`, (ctx) => {
      ctx.type = 'text/javascript';
      ctx.set('Cache-Control', 'public, max-age=86400');
      ctx.set('X-Content-Type-Options', 'nosniff');
      ctx.body = file;
    });
  }
  for (const [name, file] of files) {
    router.get(`/assets/${name}`, (ctx) => {
      ctx.type = contentTypes[path.extname(name)]!;
      ctx.set('Cache-Control', 'public, max-age=3600');
      ctx.body = file;
    });
  }
  return router;
}
