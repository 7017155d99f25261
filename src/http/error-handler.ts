import type { Context, Middleware } from 'koa';
import { z } from 'zod';
import { databaseRetryAfterSeconds, isDatabaseUnavailable } from '../db/database-unavailable.js';
import type { Logger } from '../logger.js';
import { ApiError, payloadTooLarge, serviceUnavailable } from './api-error.js';
import { pageLanguage } from '../i18n/page-language.js';
import { pageErrorText } from './page-error-text.js';
import { renderPage } from './pages.js';
import { TooManyRequestsHeld } from './requests-in-flight.js';

/** How an endpoint answers an error: our JSON body, RFC 6749 JSON (oidc/oauth-error.ts) or a page. */
export type ErrorAnswer = (ctx: Context, caught: unknown) => void;

/**
 * Outermost middleware of our JSON APIs: ApiError and zod errors become the documented error body;
 * the database being away is a 503 with Retry-After; anything else is a bug, logged with the request
 * and answered 500 without internals.
 */
export function jsonErrors(logger: Logger): Middleware {
  const answer = jsonErrorAnswer(logger);
  return async function jsonErrorHandler(ctx, next) {
    try {
      await next();
    } catch (caught) {
      answer(ctx, caught);
    }
  };
}

export function jsonErrorAnswer(logger: Logger): ErrorAnswer {
  return (ctx, caught) => {
    const error = toApiError(caught);
    logFailure(logger, ctx, caught, error.status);
    ctx.status = error.status;
    for (const [name, value] of Object.entries(error.headers)) ctx.set(name, value);
    ctx.set('Cache-Control', 'no-store');
    ctx.body = error.toBody();
  };
}

/** The error page (views/error.eta) with the same status, code and headers as the JSON answer. */
export function errorPageAnswer(logger: Logger): ErrorAnswer {
  return (ctx, caught) => {
    const error = toApiError(caught);
    logFailure(logger, ctx, caught, error.status);
    renderErrorPage(ctx, error);
  };
}

export function renderErrorPage(ctx: Context, error: ApiError): void {
  for (const [name, value] of Object.entries(error.headers)) ctx.set(name, value);
  const lang = pageLanguage(ctx);
  renderPage(
    ctx,
    'error',
    { error: error.code, description: pageErrorText(lang, error), lang },
    error.status,
  );
}

/**
 * The app's outermost error boundary (the request envelope's). An error no router answered (the rate
 * limits in front of the engine, the engine's session save after its own error handling, a page's
 * failure) is answered in its endpoint's shape, never with Koa's plain-text 500. The failed answer's
 * headers (a redirect's Location, cookies) are dropped first, as Koa would. False when the answer
 * has begun already: the error then goes on to Koa.
 */
export function uncaughtErrors(
  answerFor: (ctx: Context) => ErrorAnswer,
): (ctx: Context, caught: unknown) => boolean {
  return function answerUncaughtError(ctx, caught) {
    if (ctx.headerSent || !ctx.writable) return false;
    for (const name of ctx.res.getHeaderNames()) ctx.res.removeHeader(name);
    answerFor(ctx)(ctx, caught);
    return true;
  };
}

/** A 5xx answer is logged: the database being away as a warning, anything else as the bug it is. */
export function logFailure(logger: Logger, ctx: Context, caught: unknown, status: number): void {
  if (status < 500 || caught instanceof TooManyRequestsHeld) return;
  const request = { err: caught, method: ctx.method, path: ctx.path };
  if (isDatabaseUnavailable(caught)) logger.warn(request, 'database unavailable; answered 503');
  else logger.error(request, 'request failed');
}

export function toApiError(caught: unknown): ApiError {
  if (caught instanceof ApiError) return caught;
  if (caught instanceof z.ZodError) {
    return new ApiError(400, 'invalid_request', 'The request is not valid.', describeZodIssues(caught));
  }
  if (isDatabaseUnavailable(caught)) return serviceUnavailable(databaseRetryAfterSeconds);
  const { status, expose } = (caught ?? {}) as { status?: unknown; expose?: unknown };
  // Errors thrown by koa / body parsers (malformed JSON, body too large, wrong content type).
  if (typeof status === 'number' && status >= 400 && status < 500 && expose) {
    return status === 413
      ? payloadTooLarge()
      : new ApiError(status, 'invalid_request', (caught as Error).message);
  }
  return new ApiError(500, 'internal_error', 'Something went wrong on our side.');
}

export function describeZodIssues(error: z.ZodError): { path: string; message: string }[] {
  return error.issues.map((issue) => ({ path: issue.path.join('.'), message: issue.message }));
}
