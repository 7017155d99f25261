import type Router from '@koa/router';
import { RememberingRouter } from './remembering-router.js';
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
  const router = new RememberingRouter({ prefix });
  router.use(jsonErrors(logger));
  router.use(jsonBodies);
  return router;
}

/** The methods whose body the parser reads (@koa/bodyparser's default): others never have one parsed. */
const parsedMethods = new Set(['POST', 'PUT', 'PATCH']);

const parseJsonBody = bodyParser({
  enableTypes: ['json'],
  jsonLimit: `${jsonBodyLimitKb}kb`,
  onError: (error) => {
    if ((error as { status?: unknown }).status === 413) {
      throw new ApiError(413, 'payload_too_large', `The request body is larger than ${jsonBodyLimitKb} kB.`);
    }
    throw new ApiError(400, 'invalid_json', `The request body is not valid JSON: ${error.message}`);
  },
});

/**
 * The request's body, in one step (each router-level middleware costs every request of the API a
 * layer of its own): only JSON (RFC 9110 §15.5.16: a body of another type is 415, rather than reaching
 * the route as no body at all and being refused for the fields it seems to lack), 64 kB at most,
 * parsed for POST, PUT and PATCH, and storable: a NUL or nesting past 32 levels is refused naming
 * where, as zod's issues are (storable-input.ts). Requests without a body pass, an empty one
 * (Content-Length: 0, as clients send for a bare POST) too.
 */
const jsonBodies: Middleware = (ctx, next) => {
  const hasBody = ctx.get('transfer-encoding') !== '' || (ctx.request.length ?? 0) > 0;
  if (hasBody && !ctx.is('json', '+json')) {
    throw unsupportedMediaType('Send the request body as JSON (Content-Type: application/json).');
  }
  if (!parsedMethods.has(ctx.method)) return next();
  return parseJsonBody(ctx, () => {
    const problem = jsonBodyProblem(ctx.request.body);
    if (problem) throw new ApiError(400, 'invalid_request', 'The request is not valid.', [problem]);
    return next();
  });
};

/** After all routes of a JSON API: unknown paths under its prefix answer the JSON 404. */
export function jsonNotFound(prefix: string, logger: Logger): Router {
  const router = new RememberingRouter({ prefix });
  router.use(jsonErrors(logger));
  router.all('/{*rest}', () => {
    throw new ApiError(404, 'not_found', 'There is no such endpoint.');
  });
  return router;
}
