import type { Grant, KoaContextWithOIDC } from 'oidc-provider';
import type { Database } from '../db/database.js';
import { allowedScopesOf } from './client-metadata.js';
import { consentStillGiven, findConsent } from './models/consent.js';

/**
 * Consent is one record per (user, client) in the consents table, not the engine's default "one grant
 * per browser session": a second authorize, from any browser, starts from what the user consented to,
 * and the consent screen only appears for scopes not consented yet. Each authorization still gets a
 * grant of its own, which is the family of its refresh tokens.
 */
export async function loadGrantFromConsent(
  ctx: KoaContextWithOIDC,
  db: Database,
  apiAudience: string,
): Promise<Grant | undefined> {
  const { oidc } = ctx;
  const grantId = oidc.result?.consent?.grantId;
  if (grantId) return oidc.provider.Grant.find(grantId);

  const accountId = oidc.session?.accountId;
  const client = oidc.client;
  if (!accountId || !client) return undefined;
  const consent = await findConsent(db, accountId, client.clientId);
  if (!consent) return undefined;

  // Only scopes the client is still allowed: an allowance removed by an administrator takes effect.
  const allowed = new Set(allowedScopesOf(client as never));
  const scopes = consent.scopes.filter((scope) => allowed.has(scope)).join(' ');
  const grant = new oidc.provider.Grant({ accountId, clientId: client.clientId });
  if (scopes) {
    grant.addOIDCScope(scopes);
    grant.addResourceScope(apiAudience, scopes);
  }
  await grant.save();
  // A withdrawal racing this deletes the consent, then the client's grants: one that ran before this
  // grant was saved left it, and the application got a code (and 30 days of refresh tokens) after the
  // consent was withdrawn. Read again, waiting for a withdrawal in flight; gone, so is this grant.
  if (!(await consentStillGiven(db, accountId, client.clientId))) {
    await grant.destroy();
    return undefined;
  }
  return grant;
}
