import type { Context } from 'koa';
import type { Clock } from '../clock.js';
import type { Logger } from '../logger.js';
import { ThrottledWarnings } from '../throttled-warnings.js';
import { ApiError } from './api-error.js';
import { requestInfo } from './request-info.js';

export interface RequestsInFlightLimits {
  /** Requests the process holds at once, in all. */
  total: number;
  /** Of those, from one client address (requestInfo: the connection's, or the trusted proxy's). */
  perAddress: number;
}

/** How soon a refused client may try again: a held request ends within a few seconds in normal use. */
const retryAfterSeconds = 1;

/**
 * The 503 of a request over the bound. Anyone can cause it at will, so it is logged as a throttled
 * warning here, not as a failure with its stack (error-handler.ts logFailure skips it).
 */
export class TooManyRequestsHeld extends ApiError {
  constructor() {
    super(
      503,
      'service_unavailable',
      `Too many requests at once. Try again in ${retryAfterSeconds} second.`,
      undefined,
      { 'Retry-After': String(retryAfterSeconds) },
    );
  }
}

/**
 * Bounds the requests a process holds at once. Each one holds its context and, while its body arrives,
 * the body read so far (up to 64 kB of JSON), on the heap: one client that opened thousands of
 * connections and sent each a request whose body never finished (9,000 of them, a few bytes each)
 * filled the 160 MB heap and the process died, for everyone. Over the bound a request is answered at
 * once with 503 and Retry-After, in its endpoint's shape, without reading its body, and its connection
 * is closed. One address may hold only part of the bound, so a single client can't take it all.
 */
export class RequestsInFlight {
  #total = 0;
  readonly #byAddress = new Map<string, number>();
  readonly #warnings: ThrottledWarnings;

  constructor(
    private readonly limits: RequestsInFlightLimits,
    logger: Logger,
    clock: Clock,
  ) {
    this.#warnings = new ThrottledWarnings(logger, clock);
  }

  /** Counts the request until its answer is sent or its connection closes; throws the 503 over the bound. */
  admit(ctx: Context): void {
    const { ip } = requestInfo(ctx);
    const held = this.#byAddress.get(ip) ?? 0;
    if (this.#total >= this.limits.total || held >= this.limits.perAddress) {
      // Close the connection after the answer: its body is never read.
      ctx.res.shouldKeepAlive = false;
      this.#warnings.warn(
        'requests_in_flight_refused',
        { ip, path: ctx.path, total: this.#total, fromAddress: held },
        'too many requests held at once; answered 503',
      );
      throw new TooManyRequestsHeld();
    }
    this.#total += 1;
    this.#byAddress.set(ip, held + 1);
    ctx.res.once('close', () => {
      this.#total -= 1;
      const left = (this.#byAddress.get(ip) ?? 1) - 1;
      if (left > 0) this.#byAddress.set(ip, left);
      else this.#byAddress.delete(ip);
    });
  }
}
