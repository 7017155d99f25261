import type { Context, Middleware } from 'koa';
import type { Brand } from '../brand.js';
import type { ServiceSettings } from '../defaults.js';
import {
  inRequestContext,
  newRequestContext,
  tagAnswerWithRequestId,
  type RequestObservers,
} from './request-context.js';
import { checkRequestHead } from './request-head.js';
import type { RequestsInFlight } from './requests-in-flight.js';
import type { SecurityHeaders } from './security-headers.js';
import { unansweredError } from './unanswered-requests.js';

export interface RequestEnvelopeParts {
  observers: RequestObservers;
  settings: ServiceSettings;
  brand: Brand;
  securityHeaders: SecurityHeaders;
  /** Answers an error nothing inside answered; false when the answer had begun (request-envelope). */
  answerUncaught(ctx: Context, caught: unknown): boolean;
  /** Counts and times the answer (operations/http-metrics.ts). */
  recordAnswer(ctx: Context, startedNs: bigint): void;
  /** The methods of paths whose router answers an unknown method as an unknown path (the engine's). */
  methodsByPath: ReadonlyMap<string, readonly string[]>;
  /** The bound on requests held at once (requests-in-flight.ts). */
  inFlight: RequestsInFlight;
}

/**
 * The outermost middleware: what every request gets, whoever answers it, in this order:
 *
 * 1. its context (request-context.ts): the request id, the service's settings and its observers, for
 *    everything deep inside the request and every log line;
 * 2. the security headers (security-headers.ts) and the product's brand for the pages;
 * 3. the request line and headers checked: at most 16 KB, no NUL in the URL (request-head.ts); and
 *    the request admitted under the bound on requests held at once (requests-in-flight.ts);
 * 4. the error boundary: an error nothing inside answered gets an answer in its endpoint's shape, and
 *    so does a request nothing answered at all (404, or 405 with Allow: unanswered-requests.ts);
 * 5. afterwards, the security headers again where an error answer dropped them, the request id on
 *    the answer, and the answer counted and timed (operations/http-metrics.ts).
 *
 * One async frame for all of it: each frame (they were a middleware each) costs every request a
 * promise, its async-hooks bookkeeping and garbage, on every endpoint alike.
 */
export function requestEnvelope(parts: RequestEnvelopeParts): Middleware {
  const {
    observers,
    settings,
    brand,
    securityHeaders,
    answerUncaught,
    recordAnswer,
    methodsByPath,
    inFlight,
  } = parts;
  return function envelope(ctx, next) {
    const started = process.hrtime.bigint();
    const context = newRequestContext(ctx, observers, settings);
    return inRequestContext(ctx, context, async () => {
      securityHeaders.beforeAnswer(ctx);
      ctx.state.brand = brand;
      try {
        checkRequestHead(ctx);
        inFlight.admit(ctx, (evicted) => {
          // Answered now, while the route still waits for the body that will never come.
          if (!answerUncaught(ctx, evicted)) return;
          securityHeaders.afterAnswer(ctx);
          tagAnswerWithRequestId(ctx, context.requestId);
          const body = typeof ctx.body === 'string' ? ctx.body : JSON.stringify(ctx.body);
          ctx.res.setHeader('Content-Length', Buffer.byteLength(body));
          ctx.res.end(body);
        });
        await next();
        const unanswered = unansweredError(ctx, methodsByPath);
        if (unanswered) throw unanswered;
      } catch (caught) {
        if (!answerUncaught(ctx, caught)) {
          recordAnswer(ctx, started);
          throw caught;
        }
      }
      securityHeaders.afterAnswer(ctx);
      tagAnswerWithRequestId(ctx, context.requestId);
      recordAnswer(ctx, started);
    });
  };
}
