import type { Middleware } from 'koa';
import { requireAccessToken, requirePermission } from '../../http/bearer-auth.js';
import type { Principal, TokenVerification } from '../../tokens/principal.js';
import { VerifiedTokenCache } from '../../tokens/verified-token-cache.js';

/** Who may read the dashboards (spec: management dashboard access needs management.dashboards.read.finance). */
export const dashboardPermission = 'management.dashboards.read.finance';
/** Who may scrape the metrics. */
export const metricsPermission = 'management.metrics.read';

/**
 * Main-auth tokens of users holding the permission (the service's own sign-in, which the dashboard page
 * uses), and service tokens with `service:<permission>` (a reporting service, a Prometheus scraper).
 * OAuth tokens of third-party applications are not accepted: they carry no permissions.
 */
export function managementAccess(verification: TokenVerification): (permission: string) => Middleware[] {
  const authenticate = requireAccessToken(verification, ['main-auth', 'oauth-service'], {
    cache: new VerifiedTokenCache<Principal>(verification.clock),
  });
  return (permission) => [authenticate, requirePermission(permission)];
}
