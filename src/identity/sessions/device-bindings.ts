import crypto from 'node:crypto';
import { stringifySetCookie } from 'cookie';
import type { Knex } from 'knex';
import type { Context } from 'koa';
import { basePath } from '../../http/base-path.js';
import { currentSettings } from '../../http/request-settings.js';
import { randomSecret, sha256 } from '../../crypto/digest.js';
import type { Queryable } from '../../db/database.js';
import type { RequestInfo } from '../auth-flow/step.js';
import { defaults } from '../../defaults.js';

/**
 * A device binding (spec: device_binding): the server-side record of a browser or app, named by a random
 * value in a long-lived httpOnly cookie (only its SHA-256 is stored). Saved accounts hang off it; it
 * does not replace the refresh token and authenticates nothing by itself.
 */
/** The device cookie's name, per service (settings.cookies.device). */
export const deviceCookieName = () => currentSettings().cookies.device;
const deviceCookieLifetimeSeconds = defaults.lifetimes.deviceCookie;

export interface DeviceBinding {
  id: string;
  /** Set when the binding was just created: the value to put in the cookie. */
  newSecret?: string;
}

/** The live binding named by the presented cookie value (now seen again), or undefined. */
export async function touchDeviceBinding(
  db: Queryable,
  presented: string,
  now: Date,
): Promise<string | undefined> {
  const [row] = (await db('device_bindings')
    .where({ secret_hash: sha256(presented) })
    .whereNull('revoked_at')
    .update({ last_seen_at: now }, ['id'])) as { id: string }[];
  return row?.id;
}

/**
 * A new binding, not stored yet: its id and cookie value, and the insert that stores it (a sign-in
 * runs it in the statement that saves the account on it: bind-device.ts).
 */
export function newDeviceBinding(
  db: Queryable,
  request: RequestInfo,
  now: Date,
): { id: string; secret: string; insert: Knex.QueryBuilder } {
  const id = crypto.randomUUID();
  const secret = randomSecret(32);
  const insert = db('device_bindings').insert({
    id,
    secret_hash: sha256(secret),
    user_agent: request.userAgent,
    ip_address: request.ip,
    created_at: now,
    last_seen_at: now,
  });
  return { id, secret, insert };
}

/** The binding a request's cookie names, without creating one. */
export async function findDeviceBinding(
  db: Queryable,
  presented: string | undefined,
): Promise<string | undefined> {
  if (!presented) return undefined;
  const row: { id: string } | undefined = await db('device_bindings')
    .where({ secret_hash: sha256(presented) })
    .whereNull('revoked_at')
    .first('id');
  return row?.id;
}

export function readDeviceCookie(ctx: Context): string | undefined {
  return ctx.cookies.get(deviceCookieName(), { signed: false }) || undefined;
}

/** Written like the refresh cookie (see refresh-cookie.ts for why not ctx.cookies); Lax: top-level pages read it. */
export function setDeviceCookie(ctx: Context, secret: string): void {
  ctx.append(
    'Set-Cookie',
    stringifySetCookie(deviceCookieName(), secret, {
      httpOnly: true,
      secure: true,
      sameSite: 'lax',
      path: basePath(ctx) || '/',
      maxAge: deviceCookieLifetimeSeconds,
    }),
  );
}
