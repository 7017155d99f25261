import type { Knex } from 'knex';
import { ApiError } from '../../http/api-error.js';
import { readSetting } from '../../platform/settings/platform-settings.js';
import { auditEventTypes, writeAuditEvent } from '../audit/audit-log.js';
import { allowedMethodsSetting } from '../auth-flow/allowed-methods.js';
import type { FlowFinisher } from '../auth-flow/flow-engine.js';
import { loadFunnel } from '../auth-flow/funnel-steps.js';
import type { AuthMethodRegistry } from '../auth-methods/auth-method-plugin.js';
import { saveUserAuthMethod } from '../auth-methods/user-auth-methods.js';
import { savePasswordHash } from '../passwords/password-credential.js';
import { checkRegistrationProfile, saveRegistrationProfile } from '../profile-fields/registration-profile.js';
import { findUserByIdentifier, insertUser } from '../users/user.js';

export const accountCreatedEvent = 'identity.account.created';

const accountExists = () =>
  new ApiError(409, 'account_exists', 'An account with this email or phone already exists. Sign in instead.');

/**
 * The end of a registration flow: the account, created in the transaction that ends the flow, from
 * what the steps gathered. The account rules hold or nothing is written:
 *
 * 1. one account per email / phone (checked, and guarded by the unique indexes against a race);
 * 2-3. at least one verified method: the contact proven by the code step, recorded as verified;
 * 5. at least one active sign-in method: the password, or, without one, codes to the verified contact,
 *    which the login funnel must then ask for (as a funnel step or an allowed additional method).
 */
export function createAccountFinisher(methods: AuthMethodRegistry): FlowFinisher {
  return async (trx, session, now) => {
    const { verifiedIdentifier, verifiedIdentifierKind, passwordHash } = session.tempData;
    if (
      typeof verifiedIdentifier !== 'string' ||
      (verifiedIdentifierKind !== 'email' && verifiedIdentifierKind !== 'phone')
    ) {
      throw new ApiError(
        400,
        'verification_required',
        'Registration needs a confirmed email or phone: the registration funnel must confirm one with a code.',
      );
    }
    const identifier = { kind: verifiedIdentifierKind, value: verifiedIdentifier } as const;
    if (await findUserByIdentifier(trx, identifier)) throw accountExists();

    const codeMethod = identifier.kind === 'email' ? 'email_otp' : 'sms_otp';
    if (typeof passwordHash !== 'string' && !(await loginAsksForCodes(trx, methods, codeMethod))) {
      throw new ApiError(400, 'password_required', 'Choose a password: it is the only way to sign in here.');
    }

    // Profile fields (user_field_definitions) checked before anything is written.
    const profile = await checkRegistrationProfile(trx, session.tempData);
    const user = await insertUserOnce(trx, identifier);
    await saveRegistrationProfile(trx, user.id, profile, now);
    if (typeof passwordHash === 'string') {
      await savePasswordHash(trx, user.id, passwordHash, now);
    } else {
      await saveUserAuthMethod(trx, user.id, codeMethod, { isEnabled: true, isVerified: true }, now);
    }
    await writeAuditEvent(
      trx,
      {
        type: accountCreatedEvent,
        userId: user.id,
        ip: session.context.ip,
        userAgent: session.context.userAgent,
        details: { identifierKind: identifier.kind, password: typeof passwordHash === 'string' },
      },
      now,
    );
    await writeAuditEvent(
      trx,
      { type: auditEventTypes.contactVerified, userId: user.id, details: { kind: identifier.kind } },
      now,
    );
    return user.id;
  };
}

async function loginAsksForCodes(
  trx: Knex.Transaction,
  methods: AuthMethodRegistry,
  codeMethod: 'email_otp' | 'sms_otp',
): Promise<boolean> {
  const stepId = methods.get(codeMethod)?.stepId;
  if (!stepId) return false;
  const login = await loadFunnel(trx, 'login');
  const allowed = await readSetting(trx, allowedMethodsSetting);
  return login.some((step) => step.stepId === stepId) || allowed.includes(codeMethod);
}

async function insertUserOnce(trx: Knex.Transaction, identifier: { kind: 'email' | 'phone'; value: string }) {
  try {
    // A savepoint, so a lost race on the unique index leaves the transaction usable for the answer.
    return await trx.transaction((savepoint) =>
      insertUser(
        savepoint,
        identifier.kind === 'email'
          ? { email: identifier.value, emailVerified: true }
          : { phone: identifier.value, phoneVerified: true },
      ),
    );
  } catch (error) {
    if ((error as { code?: string }).code === '23505') throw accountExists();
    throw error;
  }
}
