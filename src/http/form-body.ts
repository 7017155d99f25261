import querystring from 'node:querystring';
import type { Context } from 'koa';
import getRawBody from 'raw-body';

/** Thrown for a body over the limit: the endpoint answers 413 in its own shape. */
export class FormBodyTooLarge extends Error {
  override name = 'FormBodyTooLarge';
  readonly status = 413;
  readonly expose = true;
  constructor(readonly limit: number) {
    super(`the request body is too large (more than ${limit} bytes)`);
  }
}

/** A form's parameters: one value, or the list of values of a parameter given more than once. */
export type FormFields = Record<string, string | string[] | undefined>;

/**
 * The application/x-www-form-urlencoded body of an OAuth endpoint we serve ourselves (introspection,
 * userinfo by POST), parsed as the engine parses its own endpoints' bodies (node:querystring,
 * lib/shared/selective_body.js). Any other content type is an empty form, as with the engine. A
 * parameter given twice arrives as a list, which the endpoint's schema of single values refuses
 * (RFC 6749 §3.1: parameters must not be repeated).
 *
 * Leaner than a general body parser on the endpoint a resource server calls for every request it
 * serves: with co-body and qs, parsing the form was a tenth of an introspection's CPU.
 */
export async function readFormBody(ctx: Context, limit: number): Promise<FormFields> {
  if (!ctx.request.is('application/x-www-form-urlencoded')) return {};
  const declared = ctx.request.length;
  if (declared !== undefined && declared > limit) throw new FormBodyTooLarge(limit);
  let body: Buffer;
  try {
    body = await getRawBody(ctx.req, { limit, length: declared });
  } catch (error) {
    if ((error as { type?: unknown }).type === 'entity.too.large') throw new FormBodyTooLarge(limit);
    throw error;
  }
  return { ...querystring.parse(body.toString('utf8')) };
}
