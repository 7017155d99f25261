import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import type { Context } from 'koa';
import type { ServiceSettings } from '../defaults.js';

/**
 * What the code serving one request may want to know without it being passed along: the request id
 * (in every log line, error body and the X-Request-Id answer header), where to count what the
 * request did (the service's metrics) and the settings of the service serving it. One per request,
 * so two services in one process (tests, a host mounting two) never see each other's.
 *
 * It is kept on the request's Koa context, in an AsyncLocalStorage whose store is that context. The
 * service shares the engine's (`shareRequestStorage`, src/oidc/engine-requests.ts) instead of adding
 * one: on Node 20 every promise of the process pays for each AsyncLocalStorage in use, and the
 * engine's always is. A second storage cost a client_credentials grant a fifth more promise
 * bookkeeping.
 */
export interface RequestContext {
  requestId: string;
  observers: RequestObservers;
  /** The settings of the service serving the request (request-settings.ts). */
  settings?: ServiceSettings;
}

/** Counts of things deep inside a request (an audit event written, a rate limit hit). */
export interface RequestObservers {
  auditEvent?(type: string): void;
  rateLimited?(rule: string): void;
}

/** Where the context sits on the request's Koa context. */
const contextKey = Symbol('identity-service request context');

/** An AsyncLocalStorage whose store is the request's Koa context. */
export interface RequestStorage {
  getStore(): object | undefined;
  run<T>(store: object, work: () => T): T;
}

let storage: RequestStorage = new AsyncLocalStorage<object>();

/**
 * Runs requests in `shared` (the engine's storage, src/service.ts) instead of one of our own. Process
 * wide: every service of the process shares the same engine module, so they all pass the same one.
 */
export function shareRequestStorage(shared: RequestStorage): void {
  storage = shared;
}

export const requestIdHeader = 'X-Request-Id';

/** An id a proxy or client sent is kept when it is short and plain, so logs can be joined up. */
const saneRequestId = /^[A-Za-z0-9._:@/+=-]{1,128}$/;

export function currentRequest(): RequestContext | undefined {
  return (storage.getStore() as { [contextKey]?: RequestContext } | undefined)?.[contextKey];
}

/**
 * The Koa context of the request being served, for work deep inside it that must know who asked
 * (the argon2 turns per address, password-hash.ts) without every caller passing it along.
 */
export function currentKoaContext(): Context | undefined {
  const store = storage.getStore() as (Context & { [contextKey]?: RequestContext }) | undefined;
  return store?.[contextKey] ? store : undefined;
}

/** Fields pino adds to every log line written while a request is being served. */
export function requestLogFields(): { requestId?: string } {
  const requestId = currentRequest()?.requestId;
  return requestId === undefined ? {} : { requestId };
}

/** The request's context: the caller's X-Request-Id when sane, else a new UUID. */
export function newRequestContext(
  ctx: Context,
  observers: RequestObservers,
  settings?: ServiceSettings,
): RequestContext {
  const offered = ctx.get(requestIdHeader);
  const requestId = saneRequestId.test(offered) ? offered : randomUUID();
  return { requestId, observers, ...(settings ? { settings } : {}) };
}

/** Runs `work` (the rest of the request) in the request's context. */
export function inRequestContext<T>(ctx: Context, context: RequestContext, work: () => T): T {
  (ctx as { [contextKey]?: RequestContext })[contextKey] = context;
  return storage.run(ctx, work);
}

/**
 * The answer carries the request id: in the X-Request-Id header and in a JSON error body
 * (`request_id`, next to `error`), so a user's report leads to the log lines of that request. Set
 * last: an error boundary inside drops the failed answer's headers.
 */
export function tagAnswerWithRequestId(ctx: Context, requestId: string): void {
  ctx.set(requestIdHeader, requestId);
  const body: unknown = ctx.body;
  if (ctx.status >= 400 && isErrorBody(body)) ctx.body = { ...body, request_id: requestId };
}

function isErrorBody(body: unknown): body is { error: string } {
  return (
    typeof body === 'object' &&
    body !== null &&
    !Array.isArray(body) &&
    !Buffer.isBuffer(body) &&
    Object.getPrototypeOf(body) === Object.prototype &&
    typeof (body as { error?: unknown }).error === 'string'
  );
}
