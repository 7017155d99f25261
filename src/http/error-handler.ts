import type { Middleware } from 'koa';
import { z } from 'zod';
import type { Logger } from '../logger.js';
import { ApiError } from './api-error.js';

/**
 * Outermost middleware of our JSON APIs: ApiError and zod errors become the documented error body;
 * anything else is a bug, logged with the request and answered 500 without internals.
 */
export function jsonErrors(logger: Logger): Middleware {
  return async function jsonErrorHandler(ctx, next) {
    try {
      await next();
    } catch (caught) {
      const error = toApiError(caught);
      if (error.status >= 500) {
        logger.error({ err: caught, method: ctx.method, path: ctx.path }, 'request failed');
      }
      ctx.status = error.status;
      for (const [name, value] of Object.entries(error.headers)) ctx.set(name, value);
      ctx.set('Cache-Control', 'no-store');
      ctx.body = error.toBody();
    }
  };
}

export function toApiError(caught: unknown): ApiError {
  if (caught instanceof ApiError) return caught;
  if (caught instanceof z.ZodError) {
    return new ApiError(400, 'invalid_request', 'The request is not valid.', describeZodIssues(caught));
  }
  const status = (caught as { status?: unknown; expose?: unknown }).status;
  // Errors thrown by koa / body parsers (malformed JSON, body too large, wrong content type).
  if (
    typeof status === 'number' &&
    status >= 400 &&
    status < 500 &&
    (caught as { expose?: unknown }).expose
  ) {
    return new ApiError(
      status,
      status === 413 ? 'payload_too_large' : 'invalid_request',
      (caught as Error).message,
    );
  }
  return new ApiError(500, 'internal_error', 'Something went wrong on our side.');
}

export function describeZodIssues(error: z.ZodError): { path: string; message: string }[] {
  return error.issues.map((issue) => ({ path: issue.path.join('.'), message: issue.message }));
}
