import { ApiError } from '../http/api-error.js';
import { principalHasPermission, type Principal } from '../tokens/principal.js';
import type { OAuthClient } from './models/oauth-client.js';
import { isServiceScope, servicePrefix } from './scopes.js';

/**
 * What a person who manages OAuth clients may hand to a client. Managing clients
 * (identity.oauth_clients.manage) is not every permission: a service client's token acts with its
 * `service:<permission>` scopes, and a first-party client's tokens act with its users' own authority.
 * So without these rules a client manager could register a client and act, through its token, with
 * permissions they were never given.
 *
 * - A `service:<permission>` scope is given to a client only by someone who holds that permission
 *   (or `*`). Scopes a client already has may stay when someone else changes it.
 * - A first-party client is changed, and its secret rotated, only by a holder of `*`: whoever decides
 *   where its codes go, or holds its secret, receives tokens with the authority of everyone who signs
 *   in to it, administrators included. Disabling or deleting it hands nobody anything, so the
 *   client-management permission is enough for those.
 * - Rotating a service client's secret hands its permissions to the caller: they must hold them all.
 * - Enabling a disabled client gives its secret, and its redirect URIs, back what they could do: an
 *   administrator may have disabled it because the secret leaked. The same rules as for its secret.
 *
 * The CLI is the operator's, with no principal: these rules are for the HTTP APIs.
 */

/** The permission that may change a first-party client: every permission, as super_admin holds. */
export const firstPartyClientPermission = '*';

/** The service scopes among `scopes` whose permission the principal does not hold. */
export function serviceScopesNotHeld(principal: Principal, scopes: readonly string[]): string[] {
  return [
    ...new Set(
      scopes.filter(
        (scope) =>
          isServiceScope(scope) && !principalHasPermission(principal, scope.slice(servicePrefix.length)),
      ),
    ),
  ];
}

/**
 * 403 unless the principal holds the permission of every service scope it gives: those of `scopes` a
 * client does not already have (`alreadyGranted`).
 */
export function requireMayGrantScopes(
  principal: Principal,
  scopes: readonly string[],
  alreadyGranted: readonly string[] = [],
): void {
  const kept = new Set(alreadyGranted);
  const notHeld = serviceScopesNotHeld(
    principal,
    scopes.filter((scope) => !kept.has(scope)),
  );
  if (notHeld.length > 0) {
    throw new ApiError(
      403,
      'forbidden',
      `You can only give a client permissions you hold yourself; you do not hold ${notHeld.join(', ')}.`,
      { scopes: notHeld },
    );
  }
}

/** 403 unless the principal may change this client's registration (a first-party client needs `*`). */
export function requireMayChangeClient(principal: Principal, client: OAuthClient): void {
  if (client.firstParty && !principalHasPermission(principal, firstPartyClientPermission)) {
    throw new ApiError(
      403,
      'forbidden',
      'A first-party client acts with the authority of the people who sign in to it: only an ' +
        'administrator holding every permission (*) may change it, rotate its secret or enable it.',
      { permission: firstPartyClientPermission },
    );
  }
}

/**
 * 403 unless the principal may receive this client's new secret: they may change it, and hold every
 * permission its service scopes carry (whoever has the secret acts with them).
 */
export function requireMayRotateSecret(principal: Principal, client: OAuthClient): void {
  requireMayChangeClient(principal, client);
  requireHoldsServiceScopes(principal, client, 'The new secret would let you act');
}

/**
 * 403 unless the principal may enable this disabled client: its secret works again, with whatever
 * authority the client carries, so as for rotating it (a first-party client needs `*`, a service
 * client's permissions must be held).
 */
export function requireMayEnableClient(principal: Principal, client: OAuthClient): void {
  requireMayChangeClient(principal, client);
  requireHoldsServiceScopes(principal, client, 'Enabled, its secret would act again');
}

function requireHoldsServiceScopes(principal: Principal, client: OAuthClient, consequence: string): void {
  const notHeld = serviceScopesNotHeld(principal, client.allowedScopes);
  if (notHeld.length > 0) {
    throw new ApiError(
      403,
      'forbidden',
      `${consequence} with this client's permissions; you do not hold ${notHeld.join(', ')}.`,
      { scopes: notHeld },
    );
  }
}
