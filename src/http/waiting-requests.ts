import { setTimeout as sleep } from 'node:timers/promises';
import type { Context } from 'koa';
import { currentKoaContext } from './request-context.js';

/**
 * Requests waiting their turn before doing anything (a place on a lockout counter, an argon2 slot):
 * at the bound on requests held at once, one of them gives its place to a newcomer from an address
 * that holds fewer (requests-in-flight.ts), answered 503 with Retry-After. Ending such a wait undoes
 * nothing, which is what makes it safe to end: the request has claimed and written nothing yet.
 */
const waiting = new WeakMap<Context, AbortController>();

/** A request's wait, from startWait: `signal` aborts (with the answer to give) if its place goes. */
export interface RequestWait {
  signal: AbortSignal;
  /** The wait is over: the request starts its work, and its place can't be taken any more. */
  end(): void;
}

/** Marks the current request as waiting until `end()`. Outside a request (a start-up task), undefined. */
export function startWait(): RequestWait | undefined {
  const ctx = currentKoaContext();
  if (!ctx) return undefined;
  const controller = new AbortController();
  waiting.set(ctx, controller);
  return {
    signal: controller.signal,
    end: () => {
      if (waiting.get(ctx) === controller) waiting.delete(ctx);
    },
  };
}

/** Sleeps `milliseconds` as a wait of the current request; throws the answer if its place goes. */
export async function sleepWaiting(milliseconds: number): Promise<void> {
  const wait = startWait();
  try {
    await sleep(milliseconds, undefined, wait && { signal: wait.signal });
  } catch (error) {
    throw wait?.signal.aborted ? wait.signal.reason : error;
  } finally {
    wait?.end();
  }
}

/** Ends the wait `ctx` is in, the request to answer `answer`; false when it is in none. */
export function endWaitOf(ctx: Context, answer: Error): boolean {
  const controller = waiting.get(ctx);
  if (!controller) return false;
  waiting.delete(ctx);
  controller.abort(answer);
  return true;
}
