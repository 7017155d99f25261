import { Script, createContext } from 'node:vm';

/**
 * How long one value may take to be matched against an administrator's pattern. A match of a few
 * hundred characters takes microseconds; one that takes longer is backtracking without end.
 */
export const patternMatchBudgetMs = 50;

// Refusing nested repetition when a pattern is saved (safe-regex2) misses overlapping alternatives
// under one repetition: `(a|aa)*` took 14 s on 40 a's and a `!`, and 2,000 characters (a field's
// most) would hold the process, and every request of everyone, for good; any stranger can type that
// on the registration page. V8 can't bound a RegExp on its own, but a vm script's timeout interrupts
// one: the match runs there, with its time limited. Only strings go in and a boolean comes out.
const sandbox = createContext({ pattern: '', text: '' });
const wholeMatch = new Script('new RegExp(`^(?:${pattern})$`).test(text)');

/**
 * Whether `text` matches the whole of `pattern` (a JavaScript regular expression, no flags), or
 * `'too-slow'` when matching took longer than the budget (the value is refused, not waited for).
 */
export function matchesWholePattern(pattern: string, text: string): boolean | 'too-slow' {
  sandbox.pattern = pattern;
  sandbox.text = text;
  try {
    return wholeMatch.runInContext(sandbox, { timeout: patternMatchBudgetMs }) === true;
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ERR_SCRIPT_EXECUTION_TIMEOUT') return 'too-slow';
    throw error;
  } finally {
    sandbox.pattern = '';
    sandbox.text = '';
  }
}
