import type { Middleware } from 'koa';
import compose from 'koa-compose';
import type { Clock } from '../../clock.js';
import type { Database } from '../../db/database.js';
import { requireAccessToken } from '../../http/bearer-auth.js';
import type { TokenVerification } from '../../tokens/principal.js';
import { requireActiveSession } from './require-active-session.js';
import type { SessionPolicy } from './session-policy.js';

export interface SignedInDependencies {
  db: Database;
  clock: Clock;
  tokenVerification: TokenVerification;
  sessionPolicy: SessionPolicy;
}

/**
 * The guard of every route that reads or changes the signed-in user's account: a main-auth access token
 * AND its session still live (not logged out, revoked, expired or idle). A main-auth access token is
 * self-contained for its 15 minutes; without the session check, one copied before a logout would keep
 * working on the account until it expires. Puts the principal and the session in ctx.state
 * (`principalOf`, `activeSessionOf`).
 */
export function requireSignedIn(deps: SignedInDependencies): Middleware {
  return compose([
    requireAccessToken(deps.tokenVerification, ['main-auth']),
    requireActiveSession(deps.db, deps.clock, deps.sessionPolicy),
  ]);
}
