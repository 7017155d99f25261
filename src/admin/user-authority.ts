import { ApiError } from '../http/api-error.js';
import type { UserAccess } from '../identity/access/user-access.js';
import { principalHasPermission, type Principal } from '../tokens/principal.js';

/**
 * What a holder of identity.users.manage may do to a user who holds more than they do. Disabling a
 * user or ending their sessions hands nobody anything: a help desk may do it to anyone. Enabling a
 * disabled user or lifting their lockouts gives back what the account can do to whoever holds, or
 * guesses, its password: an administrator disabled because their account was taken over, or five
 * more guesses at a super administrator's password after every unlock. Those take every permission
 * the user holds (`*` for a super administrator).
 */
export function requireMayRestoreUser(principal: Principal, target: UserAccess): void {
  const notHeld = target.permissions.filter((permission) => !principalHasPermission(principal, permission));
  if (notHeld.length > 0) {
    throw new ApiError(
      403,
      'forbidden',
      `This user holds permissions you do not hold (${notHeld.join(', ')}): only someone who holds ` +
        'them may enable the user or lift their lockouts.',
      { permissions: notHeld },
    );
  }
}
