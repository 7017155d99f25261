import engineRequests from 'oidc-provider/lib/helpers/als.js';

/**
 * The engine's AsyncLocalStorage: its store is the request's Koa context (`Provider.ctx`). Not the
 * engine's public API (src/oidc/engine-internals.d.ts): an engine upgrade checks it. The service runs
 * every request in it and keeps its own request context there (src/http/request-context.ts), because
 * on Node 20 every promise of the process pays for each AsyncLocalStorage in use, and the engine's
 * always is.
 */
export const engineRequestStorage = engineRequests;
