import type { Middleware } from 'koa';

/**
 * PostgreSQL cannot store the NUL character (U+0000) in text or jsonb: a statement carrying one fails,
 * which would answer a request that merely contains it with a 500. No field of this service (nor
 * any OAuth parameter: RFC 6749 Appendix A allows printable characters only) has a use for it, so
 * requests carrying it are refused at the edge: 400, in the endpoint's own error shape (the status
 * and `expose` make every error answer read it as a client's `invalid_request`).
 */
export class NulCharacterRefused extends Error {
  override name = 'NulCharacterRefused';
  readonly status = 400;
  readonly expose = true;

  constructor(where: string) {
    super(`${where} must not contain the NUL character (U+0000).`);
  }
}

/** Every request: a NUL in its path or query (percent-encoded: a URL carries no raw control bytes). */
export const refuseNulInUrl: Middleware = (ctx, next) => {
  if (ctx.url.includes('%00')) throw new NulCharacterRefused('The URL');
  return next();
};

/** The dotted path of the first string (key or value) of a parsed JSON body that contains a NUL. */
export function pathOfNulCharacter(value: unknown, path = ''): string | undefined {
  if (typeof value === 'string') return value.includes('\u0000') ? path : undefined;
  if (typeof value !== 'object' || value === null) return undefined;
  for (const [key, item] of Object.entries(value)) {
    const itemPath = path ? `${path}.${key}` : key;
    if (key.includes('\u0000')) return itemPath;
    const found = pathOfNulCharacter(item, itemPath);
    if (found !== undefined) return found;
  }
  return undefined;
}
