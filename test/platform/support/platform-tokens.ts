import crypto from 'node:crypto';
import type { Queryable } from '../../../src/db/database.js';
import { loadUserAccess } from '../../../src/identity/access/user-access.js';
import { createServiceClient, createTestUser } from '../../support/fixtures.js';
import { discover, oidc } from '../../support/relying-party.js';
import { mainAuthToken } from '../../support/sign-in.js';
import type { TestService } from '../../support/test-service.js';

/** A role holding exactly these permissions (unique key per call). */
export async function createRole(db: Queryable, permissions: string[]): Promise<string> {
  const key = `role_${crypto.randomBytes(4).toString('hex')}`;
  const [role] = await db('roles').insert({ key, name: key }, ['id']);
  if (permissions.length > 0) {
    await db('role_permissions').insert(
      permissions.map((permission) => ({ role_id: role.id, permission_key: permission })),
    );
  }
  return key;
}

/**
 * A main-auth access token of a new user holding these roles; roles and permissions are read from the
 * database as at every real token issue.
 */
export async function userToken(svc: TestService, roles: string[] = []): Promise<string> {
  const user = await createTestUser(svc.service.db, { roles, password: null });
  const access = await loadUserAccess(svc.service.db, user.id);
  return mainAuthToken(svc, user, access);
}

/** A user token with one permission, through a role made for it. */
export async function userTokenWith(svc: TestService, permissions: string[]): Promise<string> {
  return userToken(svc, [await createRole(svc.service.db, permissions)]);
}

/** A client-credentials access token from the real token endpoint, for a new service client. */
export async function serviceToken(
  svc: TestService,
  scopes: string[],
): Promise<{ token: string; clientId: string }> {
  const { client, clientSecret } = await createServiceClient(svc.service.db, scopes);
  const config = await discover(svc.issuer, client.clientId, clientSecret);
  const response = await oidc.clientCredentialsGrant(config, { scope: scopes.join(' ') });
  return { token: response.access_token, clientId: client.clientId };
}
