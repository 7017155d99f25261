import type { Socket } from 'node:net';
import type { Context } from 'koa';
import type { Clock } from '../clock.js';
import type { Logger } from '../logger.js';
import { ThrottledWarnings } from '../throttled-warnings.js';
import { ApiError } from './api-error.js';
import { requestInfo } from './request-info.js';
import { endWaitOf } from './waiting-requests.js';

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
 * The 408 of a request that was still waiting for its body when the bound was reached and a newcomer
 * took its place (RFC 9110 §15.5.9: the server would not wait for the rest of the request).
 */
export class RequestBodyNotInTime extends ApiError {
  constructor() {
    super(408, 'request_timeout', 'The request body did not arrive in time.');
  }
}

/** A request counted under the bound, and how to answer it should it be evicted. */
interface HeldRequest {
  ctx: Context;
  ip: string;
  evict(): void;
}

/**
 * Bounds the requests a process holds at once. Each one holds its context and, while its body arrives,
 * the body read so far (up to 64 kB of JSON), on the heap: one client that opened thousands of
 * connections and sent each a request whose body never finished (9,000 of them, a few bytes each)
 * filled the 160 MB heap and the process died, for everyone. Over an address's share a request is
 * answered at once with 503 and Retry-After, in its endpoint's shape, without reading its body, and
 * its connection is closed, so a single client can't take the bound.
 *
 * At the bound itself, a newcomer takes the place of the request that has waited longest for its body
 * (answered 408, its connection closed): a few addresses dripping bodies held every place, and every
 * other client got 503 for as long as they kept dripping. Next, a request waiting its turn of an address
 * holding more places than the newcomer's gives its place up (#placeOfAWait). Only when neither is
 * there (all are being served) is the newcomer refused with 503.
 */
export class RequestsInFlight {
  /** In the order they arrived: the first one waiting for its body is the one to evict. */
  readonly #held = new Set<HeldRequest>();
  readonly #byAddress = new Map<string, number>();
  /** The requests held of each connection: given back when it closes (see #heldUntilClosed). */
  readonly #bySocket = new WeakMap<Socket, Set<HeldRequest>>();
  readonly #warnings: ThrottledWarnings;

  constructor(
    private readonly limits: RequestsInFlightLimits,
    logger: Logger,
    clock: Clock,
  ) {
    this.#warnings = new ThrottledWarnings(logger, clock);
  }

  /**
   * Counts the request until its answer is sent or its connection closes; throws the 503 over the
   * bound. `evict` answers the request (408) should a newcomer take its place while its body is
   * still arriving.
   */
  admit(ctx: Context, evict: (error: RequestBodyNotInTime) => void): void {
    const ip = requestInfo(ctx).addressBlock;
    const fromAddress = this.#byAddress.get(ip) ?? 0;
    if (fromAddress >= this.limits.perAddress || !this.#placeAtTheBound(ip)) {
      // Close the connection after the answer: its body is never read.
      ctx.res.shouldKeepAlive = false;
      this.#warnings.warn(
        'requests_in_flight_refused',
        { ip, path: ctx.path, total: this.#held.size, fromAddress },
        'too many requests held at once; answered 503',
      );
      throw new TooManyRequestsHeld();
    }
    const held: HeldRequest = {
      ctx,
      ip,
      evict: () => {
        ctx.res.shouldKeepAlive = false;
        evict(new RequestBodyNotInTime());
        // Answered, the connection closes once the answer is out; else it goes at once. Either way
        // the body is never read, and the route waiting for it ends as for a client that left.
        if (!ctx.res.writableEnded) ctx.req.destroy();
      },
    };
    this.#held.add(held);
    this.#byAddress.set(ip, fromAddress + 1);
    const ofSocket = this.#heldUntilClosed(ctx.req.socket);
    ofSocket.add(held);
    ctx.res.once('close', () => {
      ofSocket.delete(held);
      this.#release(held);
    });
  }

  /**
   * The requests of a connection, each given back when the connection closes, even one whose answer
   * never learns of it. A request pipelined behind another (HTTP/1.1 lets a client send requests
   * without waiting for answers) has its answer queued until those before it are written; when the
   * connection closes first (an answer before it was the 503 that closes it, or the client left),
   * Node emits no 'close' on the queued answer. One connection pipelining past its address's share
   * had the requests after that 503 admitted as earlier places freed, and those places were never
   * given back: one burst took all but one place of the address's share for good, and any two requests
   * at once from that address (everyone behind it) got 503 until the process restarted. One listener
   * per connection, however many requests it pipelines.
   */
  #heldUntilClosed(socket: Socket): Set<HeldRequest> {
    const known = this.#bySocket.get(socket);
    if (known) return known;
    const requests = new Set<HeldRequest>();
    this.#bySocket.set(socket, requests);
    socket.once('close', () => {
      for (const held of requests) this.#release(held);
      requests.clear();
    });
    return requests;
  }

  /**
   * Whether there is a place below the bound, making one if need be: the longest wait for a body, or
   * for the client to read its answer, goes first; then a request waiting its turn
   * (waiting-requests.ts) of an address holding more than one place above the newcomer's.
   */
  #placeAtTheBound(ip: string): boolean {
    if (this.#held.size < this.limits.total) return true;
    for (const held of this.#held) {
      if (!held.ctx.req.complete) {
        this.#release(held);
        this.#warnings.warn(
          'requests_in_flight_evicted',
          { ip: held.ip, path: held.ctx.path, for: ip },
          'requests held at once at the bound; one waiting for its body answered 408',
        );
        held.evict();
        return true;
      }
      if (answerUnread(held.ctx)) {
        this.#release(held);
        this.#warnings.warn(
          'requests_in_flight_unread',
          { ip: held.ip, path: held.ctx.path, for: ip },
          'requests held at once at the bound; the connection of an answer never read closed',
        );
        held.ctx.req.socket.destroy();
        return true;
      }
    }
    return this.#placeOfAWait(ip);
  }

  /**
   * A few addresses holding every place with requests that wait their turn (sign-in attempts waiting
   * for a lockout counter or an argon2 slot, up to seconds each) kept everyone else at 503. The newest
   * waiting request of the address holding the most places, if that is more than one above the
   * newcomer's, gives up its place: answered 503 with Retry-After, it has done nothing yet.
   */
  #placeOfAWait(ip: string): boolean {
    const own = this.#byAddress.get(ip) ?? 0;
    const heavier = [...this.#byAddress]
      .filter(([, count]) => count > own + 1)
      .sort(([, a], [, b]) => b - a)
      .map(([address]) => address);
    if (heavier.length === 0) return false;
    const newestFirst = [...this.#held].reverse();
    for (const address of heavier) {
      for (const held of newestFirst) {
        if (held.ip !== address || !endWaitOf(held.ctx, new TooManyRequestsHeld())) continue;
        this.#release(held);
        this.#warnings.warn(
          'requests_in_flight_wait_ended',
          { ip: held.ip, path: held.ctx.path, for: ip },
          'requests held at once at the bound; one waiting its turn answered 503',
        );
        return true;
      }
    }
    return false;
  }

  #release(held: HeldRequest): void {
    if (!this.#held.delete(held)) return;
    const left = (this.#byAddress.get(held.ip) ?? 1) - 1;
    if (left > 0) this.#byAddress.set(held.ip, left);
    else this.#byAddress.delete(held.ip);
  }
}

/**
 * Whether the request is answered and its answer waits for the client to take it: all of it written,
 * not all of it handed to the connection (or queued behind such an answer on a pipelining connection).
 * Node has no timeout for sending, so a client that never reads holds the place as long as it keeps
 * the connection open: a few addresses doing so held every place, and everyone else got 503.
 */
function answerUnread(ctx: Context): boolean {
  return ctx.res.writableEnded && !ctx.res.writableFinished;
}
