import type { Queryable } from '../db/database.js';
import { findUserWithAccess, type UserAccess } from '../identity/access/user-access.js';
import { userFromRow, type User, type UserRow } from '../identity/users/user.js';
import type { OidcScope } from './scopes.js';
import { isUuid } from '../identity/uuid.js';

export interface OrganizationMembershipClaim {
  organization_id: string;
  organization_name: string | null;
  role: string;
}

/**
 * A signed-in user as the provider sees them: the user record, roles and permissions (loaded at every
 * token issue, so a role change shows in the next token) and the claims of a set of scopes.
 */
export interface Account {
  user: User;
  access: UserAccess;
}

/** The active user with this id, or undefined (unknown, or disabled: a disabled user gets no tokens). */
export async function loadAccount(db: Queryable, userId: string): Promise<Account | undefined> {
  if (!isUuid(userId)) return undefined;
  const found = await findUserWithAccess<UserRow>(db, userId);
  return found && accountOf(found);
}

/** The account of a user read with their access; undefined for a disabled user. */
export function accountOf(found: { user: UserRow; access: UserAccess }): Account | undefined {
  if (found.user.status !== 'active') return undefined;
  return { user: userFromRow(found.user), access: found.access };
}

/** The claims of the given scopes only (spec: Scopes and claims); `sub` always. */
export async function claimsForScopes(
  db: Queryable,
  account: Account,
  scopes: ReadonlySet<string>,
): Promise<{ sub: string; [claim: string]: unknown }> {
  const { user, access } = account;
  const has = (scope: OidcScope) => scopes.has(scope);
  const claims: Record<string, unknown> = { sub: user.id };
  if (has('profile')) {
    // `name`: the full name as the standard claim (OIDC Core 5.1) most clients display.
    const name = [user.givenName, user.familyName].filter(Boolean).join(' ');
    Object.assign(claims, {
      name: name || undefined,
      given_name: user.givenName ?? undefined,
      family_name: user.familyName ?? undefined,
      preferred_username: user.preferredUsername ?? undefined,
      picture: user.picture ?? undefined,
    });
  }
  if (has('email') && user.email) {
    Object.assign(claims, { email: user.email, email_verified: user.emailVerified });
  }
  if (has('phone') && user.phone) {
    Object.assign(claims, { phone_number: user.phone, phone_number_verified: user.phoneVerified });
  }
  if (has('organizations')) {
    claims.organization_memberships = await loadOrganizationMemberships(db, user.id);
  }
  if (has('roles')) {
    Object.assign(claims, { global_roles: access.roles, permissions: access.permissions });
  }
  for (const [name, value] of Object.entries(claims)) if (value === undefined) delete claims[name];
  return claims as { sub: string; [claim: string]: unknown };
}

async function loadOrganizationMemberships(
  db: Queryable,
  userId: string,
): Promise<OrganizationMembershipClaim[]> {
  return db('organization_memberships')
    .where({ user_id: userId })
    .orderBy(['created_at', 'id'])
    .select('organization_id', 'organization_name', 'role');
}
