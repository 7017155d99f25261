import fs from 'node:fs';
import path from 'node:path';
import Router from '@koa/router';
import { viewsDirectory } from './pages.js';

const contentTypes: Record<string, string> = { '.css': 'text/css', '.js': 'text/javascript' };

/** GET /assets/<file>: the static files of our pages (views/assets), read once at start. */
export function assetRoutes(): Router {
  const directory = path.join(viewsDirectory, 'assets');
  const files = new Map(
    fs
      .readdirSync(directory)
      .filter((file) => path.extname(file) in contentTypes)
      .map((file) => [file, fs.readFileSync(path.join(directory, file))]),
  );
  const router = new Router();
  router.get('/assets/:file', (ctx) => {
    const file = files.get(ctx.params.file!);
    if (!file) return;
    ctx.type = contentTypes[path.extname(ctx.params.file!)]!;
    ctx.set('Cache-Control', 'public, max-age=3600');
    ctx.body = file;
  });
  return router;
}
