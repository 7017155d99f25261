import Router from '@koa/router';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import Koa, { type Context } from 'koa';
import {
  crmSnapshotPaths,
  crmSnapshotScopes,
  payoutPeriodQuerySchema,
  periodQuerySchema,
} from '../crm-contract/crm-snapshots.js';
import type { CrmState } from './crm-state.js';

export interface CrmSnapshotServerOptions {
  /** The identity service whose client-credentials tokens are accepted (its JWKS verifies them). */
  issuer: string;
  /** The `aud` those tokens carry (API_AUDIENCE). */
  audience: string;
  /** The crm records as published so far. */
  state: () => CrmState;
  now?: () => Date;
}

/** How the simulated crm answers: as it should, not at all (503), or with something off the contract. */
export type SnapshotServerMode = 'ok' | 'down' | 'garbage';

/**
 * The three snapshot endpoints of the simulated crm, answering from what it published (so a consumer
 * that took every event in reconciles to zero). Tokens are verified as a real resource server would:
 * RS256 JWTs of the identity service's key set, `typ` at+jwt, issuer, audience, and the scope.
 */
export function crmSnapshotServer(options: CrmSnapshotServerOptions) {
  const keySet = createRemoteJWKSet(new URL(`${options.issuer.replace(/\/+$/, '')}/.well-known/jwks.json`));
  const now = options.now ?? (() => new Date());
  const control = { mode: 'ok' as SnapshotServerMode, requests: 0 };
  const app = new Koa();
  const router = new Router();

  const refuse = (ctx: Context, status: number, error: string, message: string) => {
    ctx.status = status;
    ctx.body = { error, message };
  };
  const authorized = async (ctx: Context, scope: string): Promise<boolean> => {
    const token = /^Bearer (.+)$/i.exec(ctx.get('authorization'))?.[1];
    if (!token) {
      refuse(ctx, 401, 'unauthorized', 'A bearer token is required.');
      return false;
    }
    try {
      const { payload } = await jwtVerify(token, keySet, {
        issuer: options.issuer,
        audience: options.audience,
        typ: 'at+jwt',
        algorithms: ['RS256'],
      });
      const scopes = typeof payload.scope === 'string' ? payload.scope.split(' ') : [];
      if (!scopes.includes(scope)) {
        refuse(ctx, 403, 'insufficient_scope', `This needs the scope ${scope}.`);
        return false;
      }
      return true;
    } catch {
      refuse(ctx, 401, 'invalid_token', 'The access token is invalid or expired.');
      return false;
    }
  };

  app.use(async (ctx, next) => {
    control.requests += 1;
    if (control.mode === 'down') return refuse(ctx, 503, 'unavailable', 'crm is down (simulated).');
    if (control.mode === 'garbage') {
      ctx.type = 'json';
      ctx.body = '{"from": "yesterday", "totals": [1, 2';
      return;
    }
    await next();
  });
  router.get(crmSnapshotPaths.sales, async (ctx) => {
    if (!(await authorized(ctx, crmSnapshotScopes.sales))) return;
    const period = periodQuerySchema.safeParse(ctx.query);
    if (!period.success) return refuse(ctx, 400, 'invalid_request', period.error.issues[0]!.message);
    ctx.body = options.state().sales(period.data, now());
  });
  router.get(crmSnapshotPaths.balance, async (ctx) => {
    if (!(await authorized(ctx, crmSnapshotScopes.balance))) return;
    ctx.body = options.state().balance(now());
  });
  router.get(crmSnapshotPaths.teacherPayouts, async (ctx) => {
    if (!(await authorized(ctx, crmSnapshotScopes.teacherPayouts))) return;
    const query = payoutPeriodQuerySchema.safeParse(ctx.query);
    if (!query.success) return refuse(ctx, 400, 'invalid_request', query.error.issues[0]!.message);
    ctx.body = options.state().teacherPayouts(query.data.period, now());
  });
  app.use(router.routes()).use(router.allowedMethods());
  return { app, control };
}
