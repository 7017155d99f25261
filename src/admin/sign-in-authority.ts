import type { Queryable } from '../db/database.js';
import { ApiError } from '../http/api-error.js';
import { wildcardPermission } from '../identity/access/user-access.js';
import { loadFunnel } from '../identity/auth-flow/funnel-steps.js';
import type { UserFunnelPlanner } from '../identity/auth-flow/user-funnel.js';
import type { AuthMethodType } from '../identity/auth-methods/auth-method-type.js';
import { principalHasPermission, type Principal } from '../tokens/principal.js';

// Any constant (the others: 4_711_2026 cleanup, 4_712_2026 ingestion, 7_403_001 outbox relay,
// 7_403_101 subject hierarchy).
const signInConfigurationLockKey = 7_403_058;

/**
 * What a holder of identity.auth_flow.manage may change of how people sign in. The login funnel and
 * the allowed methods are one configuration for everyone, administrators included: without a limit a
 * delegated flow manager could stop the service asking a super administrator for the authenticator
 * code they set up (take `totp` off the allowed methods, or out of the funnel), or replace their
 * password by a code to their mailbox, and then the administrator's account, with every permission,
 * is worth one factor that the manager, or whoever phished it, may have. As enabling or unlocking a
 * user (user-authority.ts): a change after which the login of someone holding permissions the caller
 * lacks asks them for less (a method they have set up and were asked for is no longer asked, for
 * either way they identify) takes those permissions, `*` for a super administrator. Asking everyone
 * more, or asking less of people holding no more than the caller, stays the flow manager's.
 *
 * The CLI is the operator's, with no principal: this rule is for the admin API. `change` runs inside
 * the caller's transaction, `trx`, which a refusal rolls back.
 */
export async function requireWeakensNobodyAbove<T>(
  trx: Queryable,
  principal: Principal,
  planner: UserFunnelPlanner,
  change: () => Promise<T>,
): Promise<T> {
  // One change of the sign-in configuration at a time, each judged on what the one before it left:
  // two changes sent together (TOTP off the allowed methods, and out of the funnel) each judged the
  // other's, uncommitted, still to ask what it took away, and both went through. Read committed: the
  // reads after the lock see the previous change's commit. (PGlite runs one transaction at a time.)
  await trx.raw('select pg_advisory_xact_lock(?)', [signInConfigurationLockKey]);
  const above = await usersHoldingMore(trx, principal);
  const before = new Map<string, Map<string, Set<AuthMethodType>>>();
  const loginBefore = above.length > 0 ? await loadFunnel(trx, 'login') : [];
  for (const user of above) {
    before.set(user.id, (await planner.methodsAskedByIdentifier(trx, loginBefore, user)).asked);
  }
  const result = await change();
  if (above.length === 0) return result;
  const loginAfter = await loadFunnel(trx, 'login');
  const notHeld = new Set<string>();
  for (const user of above) {
    const { asked } = await planner.methodsAskedByIdentifier(trx, loginAfter, user);
    const weakened = [...before.get(user.id)!].some(([kind, methods]) =>
      [...methods].some((method) => !asked.get(kind)?.has(method)),
    );
    if (weakened) for (const permission of user.notHeld) notHeld.add(permission);
  }
  if (notHeld.size > 0) {
    // Thrown inside the caller's transaction: the change is rolled back.
    const permissions = [...notHeld].sort();
    throw new ApiError(
      403,
      'forbidden',
      'After this change the sign-in of people who hold permissions you do not hold ' +
        `(${permissions.join(', ')}) would no longer ask for a method they have set up: only someone ` +
        'who holds them may make it.',
      { permissions },
    );
  }
  return result;
}

interface UserAbove {
  id: string;
  email: string | null;
  phone: string | null;
  /** The permissions the user holds that the principal does not (`*` alone for a super administrator). */
  notHeld: string[];
}

/** The users holding a permission the principal does not, with what they hold beyond it. */
async function usersHoldingMore(db: Queryable, principal: Principal): Promise<UserAbove[]> {
  if (principalHasPermission(principal, wildcardPermission)) return [];
  const rows: { id: string; email: string | null; phone: string | null; permission: string }[] = await db(
    'user_roles',
  )
    .join('role_permissions', 'role_permissions.role_id', 'user_roles.role_id')
    .join('users', 'users.id', 'user_roles.user_id')
    .distinct(
      'users.id as id',
      'users.email as email',
      'users.phone as phone',
      'role_permissions.permission_key as permission',
    );
  const byUser = new Map<string, UserAbove>();
  for (const row of rows) {
    if (principalHasPermission(principal, row.permission)) continue;
    const user = byUser.get(row.id) ?? { id: row.id, email: row.email, phone: row.phone, notHeld: [] };
    user.notHeld.push(row.permission);
    byUser.set(row.id, user);
  }
  for (const user of byUser.values()) {
    if (user.notHeld.includes(wildcardPermission)) user.notHeld = [wildcardPermission];
  }
  return [...byUser.values()];
}
