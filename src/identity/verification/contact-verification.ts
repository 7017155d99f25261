import { ApiError } from '../../http/api-error.js';
import { auditEventTypes, writeAuditEvent } from '../audit/audit-log.js';
import { endpointLimits, enforceEndpointLimit } from '../brute-force/endpoint-limits.js';
import { maskedContact } from '../notifications/masked-contact.js';
import { primaryContactOf, type SecurityNotifications } from '../notifications/security-notifications.js';
import { requireIdentifier } from '../passwords/password-reset.js';
import type { Identifier } from '../users/contact.js';
import { findUserById, type User } from '../users/user.js';
import { setVerifiedContact } from './verified-contact-record.js';
import {
  checkVerificationCode,
  confirmVerificationCode,
  sendVerificationCode,
  type VerificationDeps,
} from './verification-codes.js';

export interface ContactVerificationDeps extends VerificationDeps {
  notifications: SecurityNotifications;
}

export interface ContactRequester {
  userId: string;
  ip: string;
  /** What the per-address limits count (RequestInfo.addressBlock). */
  addressBlock: string;
  userAgent: string;
}

function currentContact(user: User, identifier: Identifier) {
  return identifier.kind === 'email'
    ? { value: user.email, verified: user.emailVerified }
    : { value: user.phone, verified: user.phoneVerified };
}

async function activeUser(deps: VerificationDeps, userId: string): Promise<User> {
  const user = await findUserById(deps.db, userId);
  if (!user || user.status !== 'active')
    throw new ApiError(401, 'unauthorized', 'This account is not active.');
  return user;
}

const identifierTaken = () =>
  new ApiError(409, 'identifier_taken', 'Another account uses this email or phone.');

/**
 * Adding (or confirming) an email or phone on one's own account, step 1: a contact_verify code sent to
 * it. Refused when it is already confirmed here. Whether another account has it is not said here (any
 * signed-in user could ask about address after address): the code goes out all the same, and only
 * whoever reads it learns, at the confirmation, that the contact is taken (as in registration). (The
 * route asks for a recent authentication first: a contact is where password resets go.)
 */
export async function sendContactVerification(
  deps: VerificationDeps,
  requester: ContactRequester,
  request: { identifier: string; transport?: string | undefined },
): Promise<{ expiresAt: Date; resendAfterSeconds: number }> {
  const identifier = requireIdentifier(request.identifier);
  await enforceEndpointLimit(
    deps.rateLimits,
    endpointLimits.verifySend,
    `${requester.addressBlock}|${identifier.value}`,
  );
  const user = await activeUser(deps, requester.userId);
  const current = currentContact(user, identifier);
  if (current.value === identifier.value && current.verified) {
    throw new ApiError(409, 'already_verified', 'This contact is already confirmed on your account.');
  }
  return sendVerificationCode(deps, {
    identifier,
    purpose: 'contact_verify',
    ip: requester.ip,
    addressBlock: requester.addressBlock,
    userId: user.id,
    transport: request.transport,
  });
}

/**
 * Step 2: the code. The contact becomes the user's confirmed email or phone (replacing the previous
 * one; 409 `identifier_taken` when another account has it, told only now that the code proved it), in
 * one transaction with the code's redemption and identity.contact.verified. Then the owner is
 * told where it matters: a replaced contact at that previous contact (it is where the real owner still
 * reads), an added one at the account's other confirmed contact.
 */
export async function confirmContact(
  deps: ContactVerificationDeps,
  requester: ContactRequester,
  request: { identifier: string; code: string },
): Promise<{ kind: Identifier['kind']; value: string }> {
  const identifier = requireIdentifier(request.identifier);
  const code = {
    identifier: identifier.value,
    purpose: 'contact_verify' as const,
    code: request.code,
    userId: requester.userId,
  };
  // Wrong codes are counted here, outside the transaction, so no rollback can undo them.
  await checkVerificationCode(deps, code);
  const user = await activeUser(deps, requester.userId);
  const current = currentContact(user, identifier);
  const previous = current.value;
  await deps.db.transaction(async (trx) => {
    await confirmVerificationCode(deps, code, trx);
    if (!(await setVerifiedContact(trx, user.id, identifier, deps.clock.now()))) throw identifierTaken();
    await writeAuditEvent(
      trx,
      {
        type: auditEventTypes.contactVerified,
        userId: user.id,
        ip: requester.ip,
        userAgent: requester.userAgent,
        details: {
          kind: identifier.kind,
          value: identifier.value,
          ...(previous && previous !== identifier.value ? { replaced: previous } : {}),
        },
      },
      deps.clock.now(),
    );
  });
  const shown = { contact: identifier.kind, value: maskedContact(identifier) };
  if (current.verified && previous && previous !== identifier.value) {
    deps.notifications.notify(
      user,
      { kind: 'contact_replaced', ...shown },
      { ...identifier, value: previous },
    );
  } else {
    const other = primaryContactOf(user);
    if (other && other.value !== identifier.value) {
      deps.notifications.notify(user, { kind: 'contact_added', ...shown }, other);
    }
  }
  return identifier;
}
