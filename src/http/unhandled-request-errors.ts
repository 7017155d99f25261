import type { Context } from 'koa';
import type { Clock } from '../clock.js';
import type { Logger } from '../logger.js';
import { ThrottledWarnings } from '../throttled-warnings.js';

/**
 * Koa's 'error' event: an error no answer could carry. Either the answer had begun (a failure of
 * ours mid-answer: logged as the bug it is, with its stack) or the client was gone: it closed the
 * connection before its body was read or its answer written, which anyone can do at will, so it is a
 * throttled warning without a stack (one line per minute, the rest counted).
 */
export function unhandledRequestErrors(logger: Logger, clock: Clock) {
  const warnings = new ThrottledWarnings(logger, clock);
  return (error: unknown, ctx?: Context) => {
    if (ctx && clientGone(ctx)) {
      warnings.warn(
        'client_closed_request',
        { method: ctx.method, path: ctx.path },
        'the client closed the connection before the answer; nothing answered',
      );
      return;
    }
    logger.error({ err: error }, 'unhandled request error');
  };
}

function clientGone(ctx: Context): boolean {
  return ctx.req.destroyed || ctx.res.destroyed || !ctx.writable;
}
