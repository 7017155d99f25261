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

/** Thrown for a parameter given more than once (RFC 6749 §3.1): the endpoint answers 400. */
export class RepeatedFormParameter extends Error {
  override name = 'RepeatedFormParameter';
  readonly status = 400;
  readonly expose = true;
  constructor(readonly parameter: string) {
    super(`the ${parameter.slice(0, 64)} parameter must not be repeated`);
  }
}

/** A form's parameters, each given once. */
export type FormFields = Record<string, string | undefined>;

/**
 * The application/x-www-form-urlencoded body of an OAuth endpoint we serve ourselves (introspection,
 * userinfo by POST), parsed as the engine parses its own endpoints' bodies (node:querystring,
 * lib/shared/selective_body.js). Any other content type is an empty form, as with the engine. A
 * parameter given twice is refused (RFC 6749 §3.1: parameters must not be repeated).
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
  // No prototype: a parameter named __proto__ is just a parameter.
  const fields = Object.create(null) as FormFields;
  for (const [name, value] of Object.entries(querystring.parse(body.toString('utf8')))) {
    if (Array.isArray(value)) throw new RepeatedFormParameter(name);
    fields[name] = value;
  }
  return fields;
}
