import { ApiError } from './api-error.js';

/**
 * Input the database can't store, refused at the edge with 400 in the endpoint's own error shape
 * rather than a 500 from a failed statement.
 *
 * PostgreSQL cannot store the NUL character (U+0000) in text or jsonb. No field of this service (nor
 * any OAuth parameter: RFC 6749 Appendix A allows printable characters only) has a use for it. Every
 * error answer reads the ApiError as a client's `invalid_request` (OAuth's too: oauth-error.ts).
 */
export const nulCharacterRefused = (where: string) =>
  new ApiError(400, 'invalid_request', `${where} must not contain the NUL character (U+0000).`);

/**
 * Nesting deeper than this is refused too: no body of ours nests past a few levels, and walking a
 * deeper one (here, in zod, in JSON.stringify before jsonb) recurses as deep as 64 kB of brackets go.
 */
export const maxJsonDepth = 32;

/**
 * What a JSON API body can't carry: a NUL or a lone UTF-16 surrogate in a key or value, or nesting
 * past `maxJsonDepth`. A lone surrogate (`"\ud800"`, valid JSON) is no character at all: jsonb refuses
 * it, and a text column would turn it into U+FFFD behind the sender's back.
 */
export interface JsonBodyProblem {
  /** Dotted, as zod's issue paths are reported. */
  path: string;
  message: string;
}

const nulMessage = 'must not contain the NUL character (U+0000)';
const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const loneSurrogateMessage = 'must be well-formed Unicode (a lone UTF-16 surrogate is not a character)';

/** Why a key or string value can't be stored, if it can't. */
function unstorableText(text: string): string | undefined {
  if (text.includes('\u0000')) return nulMessage;
  return loneSurrogate.test(text) ? loneSurrogateMessage : undefined;
}

/** Whether a string can be stored as it is: no NUL, no lone UTF-16 surrogate. */
export function isStorableText(text: string): boolean {
  return unstorableText(text) === undefined;
}

/** The first problem found in a parsed JSON body; a loop, not recursion, whatever the depth. */
export function jsonBodyProblem(body: unknown): JsonBodyProblem | undefined {
  const pending: { value: unknown; path: string; depth: number }[] = [{ value: body, path: '', depth: 0 }];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const { value, path, depth } = next;
    if (typeof value === 'string') {
      const message = unstorableText(value);
      if (message) return { path, message };
      continue;
    }
    if (typeof value !== 'object' || value === null) continue;
    if (depth === maxJsonDepth) return { path, message: `must not nest deeper than ${maxJsonDepth} levels` };
    for (const [key, item] of Object.entries(value)) {
      const itemPath = path ? `${path}.${key}` : key;
      const message = unstorableText(key);
      if (message) return { path: itemPath, message };
      pending.push({ value: item, path: itemPath, depth: depth + 1 });
    }
  }
  return undefined;
}
