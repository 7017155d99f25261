import type { Middleware } from 'koa';
import { missingPermission, requireAccessToken, principalOf } from '../../http/bearer-auth.js';
import { ApiError } from '../../http/api-error.js';
import { principalHasPermission, type Principal, type TokenVerification } from '../../tokens/principal.js';
import { VerifiedTokenCache } from '../../tokens/verified-token-cache.js';

/**
 * Who may call the platform API (spec: Authentication, reference data management). Every kind of
 * ecosystem access token is verified, so a valid token of the wrong kind gets a 403 that says what is
 * needed rather than a 401 "invalid token".
 */
export interface PlatformAccess {
  /** Any user token; a service token with service:<permission>. */
  read(permission: string): Middleware[];
  /**
   * A user token with the user's authority (main-auth, or OAuth of a first-party client granted the
   * roles scope) whose user holds the permission.
   */
  manage(permission: string): Middleware[];
  /** A service token (client credentials) with service:<permission>. */
  service(permission: string): Middleware[];
}

export function platformAccess(verification: TokenVerification): PlatformAccess {
  const authenticate = requireAccessToken(verification, ['main-auth', 'oauth-user', 'oauth-service'], {
    cache: new VerifiedTokenCache<Principal>(verification.clock),
  });
  const check =
    (allowed: 'user' | 'service' | 'both', permission: string, userNeedsPermission: boolean): Middleware =>
    async (ctx, next) => {
      const principal = principalOf(ctx);
      if (principal.kind === 'service' && allowed === 'user') {
        throw new ApiError(403, 'forbidden', `This needs a user's access token with ${permission}.`, {
          permission,
        });
      }
      if (principal.kind === 'user' && allowed === 'service') {
        throw new ApiError(403, 'forbidden', `This needs a service token with service:${permission}.`, {
          permission: `service:${permission}`,
        });
      }
      const needsPermission = principal.kind === 'service' || userNeedsPermission;
      if (needsPermission && !principalHasPermission(principal, permission)) {
        throw missingPermission(principal, permission);
      }
      await next();
    };
  return {
    read: (permission) => [authenticate, check('both', permission, false)],
    manage: (permission) => [authenticate, check('user', permission, true)],
    service: (permission) => [authenticate, check('service', permission, true)],
  };
}
