import { bodyParser } from '@koa/bodyparser';
import type { Middleware } from 'koa';
import { jsonBodyProblem, nulCharacterRefused } from './storable-input.js';

/**
 * The form body of a page's POST (the sign-in steps, consent, onboarding, password reset, account
 * linking): urlencoded, `limit` at most (`'16kb'`). A field carrying the NUL character, which the
 * database can't store, is refused with 400 (the error page) before the route reads it.
 */
export function pageForms(limit: string): Middleware {
  const parse = bodyParser({ enableTypes: ['form'], formLimit: limit });
  return (ctx, next) =>
    parse(ctx, () => {
      if (jsonBodyProblem(ctx.request.body)) throw nulCharacterRefused('The form');
      return next();
    });
}
