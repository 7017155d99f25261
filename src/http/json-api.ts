import Router from '@koa/router';
import type { Middleware } from 'koa';
import { bodyParser } from '@koa/bodyparser';
import type { Logger } from '../logger.js';
import { ApiError, unsupportedMediaType } from './api-error.js';
import { jsonErrors } from './error-handler.js';
import { jsonBodyProblem } from './storable-input.js';

const jsonBodyLimitKb = 64;

/**
 * A router for one of our JSON APIs (/api/v2/identity, /api/v2/platform, ...): errors in the one JSON
 * error body, JSON request bodies (64 kB at most: more is 413; a body of another type is 415), an
 * unknown path under the prefix answers 404 JSON.
 */
export function jsonApiRouter(prefix: string, logger: Logger): Router {
  const router = new Router({ prefix });
  router.use(jsonErrors(logger));
  router.use(onlyJsonBodies);
  router.use(
    bodyParser({
      enableTypes: ['json'],
      jsonLimit: `${jsonBodyLimitKb}kb`,
      onError: (error) => {
        if ((error as { status?: unknown }).status === 413) {
          throw new ApiError(
            413,
            'payload_too_large',
            `The request body is larger than ${jsonBodyLimitKb} kB.`,
          );
        }
        throw new ApiError(400, 'invalid_json', `The request body is not valid JSON: ${error.message}`);
      },
    }),
  );
  router.use(storableBodies);
  return router;
}

/** A NUL or nesting past 32 levels (storable-input.ts): refused naming where, as zod's issues are. */
const storableBodies: Middleware = (ctx, next) => {
  const problem = jsonBodyProblem(ctx.request.body);
  if (problem) throw new ApiError(400, 'invalid_request', 'The request is not valid.', [problem]);
  return next();
};

/**
 * A body that is not JSON would otherwise reach the route as no body at all, and be refused for the
 * fields it seems to lack (RFC 9110 §15.5.16: 415 names the problem). Requests without a body pass,
 * an empty one (Content-Length: 0, as clients send for a bare POST) too.
 */
const onlyJsonBodies: Middleware = (ctx, next) => {
  const hasBody = ctx.get('transfer-encoding') !== '' || (ctx.request.length ?? 0) > 0;
  if (hasBody && !ctx.is('json', '+json')) {
    throw unsupportedMediaType('Send the request body as JSON (Content-Type: application/json).');
  }
  return next();
};

/** After all routes of a JSON API: unknown paths under its prefix answer the JSON 404. */
export function jsonNotFound(prefix: string, logger: Logger): Router {
  const router = new Router({ prefix });
  router.use(jsonErrors(logger));
  router.all('/{*rest}', () => {
    throw new ApiError(404, 'not_found', 'There is no such endpoint.');
  });
  return router;
}
