import type { Queryable } from '../../db/database.js';
import { ApiError } from '../../http/api-error.js';
import { deleteMethodSecret, readMethodSecret, storeMethodSecret } from './auth-method-secrets.js';
import type { SecretBox } from './secret-box.js';
import { newTotpSecret, totpUri, verifyTotpCode } from './totp.js';
import {
  advanceMethodCounter,
  deleteUserAuthMethod,
  findUserAuthMethod,
  saveUserAuthMethod,
  type UserAuthMethod,
} from './user-auth-methods.js';

/**
 * The TOTP sign-in method kept in user_auth_methods: settings hold the id of the encrypted secret and
 * the last accepted time step (so a code is never accepted twice). Set up in two moves: `begin` makes
 * a pending method (not verified, not enabled) and shows the secret; `confirm` checks a code from the
 * authenticator app and enables it.
 */
export interface TotpDependencies {
  box: SecretBox;
  /** Shown in the authenticator app next to the account. */
  issuerName: string;
}

export interface TotpSetupView {
  secret: string;
  otpauthUrl: string;
}

interface TotpSettings {
  secretId?: string;
  lastTimeStep?: number;
}

const settingsOf = (method: UserAuthMethod) => method.settings as TotpSettings;

export const invalidCode = () => new ApiError(400, 'invalid_code', 'The code is not right. Try again.');

export async function beginTotpSetup(
  db: Queryable,
  deps: TotpDependencies,
  user: { id: string; label: string },
  now: Date,
): Promise<TotpSetupView> {
  const existing = await findUserAuthMethod(db, user.id, 'totp');
  if (existing?.isVerified) {
    throw new ApiError(
      409,
      'method_already_set_up',
      'An authenticator app is already set up. Remove it first to set up another one.',
    );
  }
  const previousSecret = existing ? settingsOf(existing).secretId : undefined;
  const secret = newTotpSecret();
  const secretId = await storeMethodSecret(db, deps.box, user.id, secret, now);
  await saveUserAuthMethod(
    db,
    user.id,
    'totp',
    { settings: { secretId }, isEnabled: false, isVerified: false },
    now,
  );
  if (previousSecret) await deleteMethodSecret(db, previousSecret);
  return { secret, otpauthUrl: totpUri(secret, user.label, deps.issuerName) };
}

/** The setup in progress (to show it again), if any. */
export async function pendingTotpSetup(
  db: Queryable,
  deps: TotpDependencies,
  user: { id: string; label: string },
): Promise<TotpSetupView | undefined> {
  const method = await findUserAuthMethod(db, user.id, 'totp');
  const secretId = method && !method.isVerified ? settingsOf(method).secretId : undefined;
  const secret = secretId ? await readMethodSecret(db, deps.box, user.id, secretId) : undefined;
  return secret ? { secret, otpauthUrl: totpUri(secret, user.label, deps.issuerName) } : undefined;
}

export async function confirmTotpSetup(
  db: Queryable,
  deps: TotpDependencies,
  userId: string,
  code: string,
  now: Date,
): Promise<UserAuthMethod> {
  const method = await findUserAuthMethod(db, userId, 'totp');
  const secretId = method && !method.isVerified ? settingsOf(method).secretId : undefined;
  const secret = secretId ? await readMethodSecret(db, deps.box, userId, secretId) : undefined;
  if (!method || !secret) {
    throw new ApiError(409, 'setup_not_started', 'Start the setup of the authenticator app first.');
  }
  const timeStep = await verifyTotpCode(secret, code, now);
  if (timeStep === undefined) throw invalidCode();
  // Compare-and-set on the pending state: two parallel confirmations enable it once.
  const changed = await db('user_auth_methods')
    .where({ id: method.id, is_verified: false })
    .update({
      is_verified: true,
      is_enabled: true,
      settings: JSON.stringify({ secretId, lastTimeStep: timeStep }),
      last_used_at: now,
      updated_at: now,
    });
  if (changed === 0) throw new ApiError(409, 'setup_not_started', 'This setup was already completed.');
  return { ...method, isVerified: true, isEnabled: true };
}

/**
 * Checks a code of the user's enabled TOTP method. False for a wrong code, a code already used (its
 * time step is not after the last accepted one) and a user without TOTP.
 */
export async function verifyUserTotp(
  db: Queryable,
  deps: TotpDependencies,
  userId: string,
  code: string,
  now: Date,
): Promise<boolean> {
  const method = await findUserAuthMethod(db, userId, 'totp');
  if (!method?.isVerified || !method.isEnabled) return false;
  const { secretId, lastTimeStep } = settingsOf(method);
  const secret = secretId ? await readMethodSecret(db, deps.box, userId, secretId) : undefined;
  if (!secret) return false;
  const timeStep = await verifyTotpCode(secret, code, now, lastTimeStep);
  if (timeStep === undefined) return false;
  return advanceMethodCounter(db, method.id, 'lastTimeStep', timeStep, now);
}

export async function removeTotp(db: Queryable, method: UserAuthMethod): Promise<void> {
  await deleteUserAuthMethod(db, method.id);
  const { secretId } = settingsOf(method);
  if (secretId) await deleteMethodSecret(db, secretId);
}
