import type { Knex } from 'knex';
import type { Queryable } from '../../db/database.js';
import { auditEventTypes, writeAuditEvent } from '../audit/audit-log.js';
import { loadFunnel } from '../auth-flow/funnel-steps.js';
import { oauthStepId } from '../auth-flow/steps/oauth.js';
import type { RequestInfo } from '../auth-flow/step.js';
import type { UserFunnelPlanner } from '../auth-flow/user-funnel.js';
import { userAuthMethodFromRow, type UserAuthMethodRow } from '../auth-methods/user-auth-methods.js';
import { findUserById, findUserByIdentifier, insertUser, type User } from '../users/user.js';
import { accountCreatedEvent } from '../registration/create-account.js';
import { FederationError } from './federation-error.js';
import type { UpstreamIdentity } from './upstream-identity.js';
import { forgetUnlinkedSubject, wasUnlinkedBy } from './unlinked-subjects.js';

/** Where a third-party sign-in lands (spec: Account rules 6 and 7). */
export type FederatedSignIn =
  | { kind: 'signed_in'; user: User; outcome: 'existing' | 'linked' | 'created' }
  /** An account has this email or phone but the provider did not vouch for it: the owner must prove it. */
  | { kind: 'confirm_link'; candidate: User; matchedBy: 'email' | 'phone' };

export async function findLinkedProvider(db: Queryable, providerId: string, subject: string) {
  const row: UserAuthMethodRow | undefined = await db('user_auth_methods')
    .where({ type: 'oauth_provider', provider: providerId, external_subject: subject })
    .first();
  return row ? userAuthMethodFromRow(row) : undefined;
}

/** How the sign-in continues after the provider answered. */
export type FederatedSignInOptions =
  /**
   * A provider's button: the sign-in ends with the provider's answer, so an account whose own login
   * asks for more than one proof is refused; `planner` tells what that login asks.
   */
  | { funnelContinues?: false; planner: UserFunnelPlanner }
  /**
   * The provider is a step of a login funnel (`oauth`): the rest of the funnel, with its second factor,
   * still runs after it, so any active account may go on.
   */
  | { funnelContinues: true };

/**
 * The account may be signed in to through a provider: active, and, through a button, not protected
 * by a second proof. The provider stands for one proof only and the buttons don't run the rest of the
 * login funnel, so an account whose login asks for more (an authenticator app, a code after the
 * password, a code the user turned on) signs in the usual way, or through a funnel whose `oauth` step
 * is followed by the rest of the funnel.
 */
async function assertUsable(
  trx: Knex.Transaction,
  user: User,
  options: FederatedSignInOptions,
): Promise<User> {
  if (user.status !== 'active') throw new FederationError('account_disabled');
  if (!options.funnelContinues && (await loginAsksSecondProof(trx, user, options.planner))) {
    throw new FederationError('second_factor_required');
  }
  return user;
}

/**
 * The user's own login (the configured funnel, personalized as the login would) asks them to prove
 * more than one method, or they have an active authenticator app: the app counts even when the
 * funnel no longer asks for it, since the user set it up to guard the account.
 *
 * A mandatory `oauth` step is a proof the login asks of everyone (personalizing keeps it: it is no
 * method a user turns off): a funnel of the password and a provider (the provider as a second check,
 * or first, then the password) asks two. It counts whether or not the provider is linked yet: the
 * button would link it by the vouched email (rule 2). Not counting it let whoever holds the provider
 * account, or the mailbox it vouches for, sign in by the button without the password.
 */
async function loginAsksSecondProof(
  trx: Knex.Transaction,
  user: User,
  planner: UserFunnelPlanner,
): Promise<boolean> {
  const funnel = await loadFunnel(trx, 'login');
  const { methods, states } = await planner.methodsAskedAtLogin(trx, funnel, user);
  const providerSteps = funnel.filter((step) => step.stepId === oauthStepId && step.mandatory).length;
  return methods.length + providerSteps > 1 || states.isActive('totp');
}

/**
 * The account rules for a person the provider identified, in the caller's transaction:
 *
 * - the provider's subject is already linked → that account;
 * - the provider vouches for the email (email_verified = true) or phone (phone_number_verified = true)
 *   of an existing account → the provider is linked to it;
 * - an existing account has that email or phone but the provider does not vouch for it → nothing is
 *   written: the person confirms the link by signing in to that account first (`confirm_link`);
 * - no match → a new account with the provider as its verified method and no password. Only contacts
 *   the provider vouches for are kept on it (an unconfirmed address could belong to someone else).
 */
export async function resolveFederatedSignIn(
  trx: Knex.Transaction,
  providerId: string,
  identity: UpstreamIdentity,
  request: RequestInfo,
  now: Date,
  options: FederatedSignInOptions,
): Promise<FederatedSignIn> {
  try {
    return await resolveOnce(trx, providerId, identity, request, now, options);
  } catch (error) {
    if (!(error instanceof ContactTakenMeanwhile)) throw error;
    // An account with this email or phone committed after the lookups (a registration, a sign-in
    // through another provider in another tab): the rules again, as if it had been there first.
    // It failed the new account's insert on the unique contact, and the person got a 500.
    return resolveOnce(trx, providerId, identity, request, now, options);
  }
}

/** The new account's email or phone was taken by an account committed since it was looked up. */
class ContactTakenMeanwhile extends Error {}

async function resolveOnce(
  trx: Knex.Transaction,
  providerId: string,
  identity: UpstreamIdentity,
  request: RequestInfo,
  now: Date,
  options: FederatedSignInOptions,
): Promise<FederatedSignIn> {
  const linked = await findLinkedProvider(trx, providerId, identity.subject);
  // An unlink that committed since the read (it waits for this row's lock otherwise) leaves no row to
  // touch: not linked any more, and the session it signed out must not be followed by this one.
  if (linked && (await trx('user_auth_methods').where({ id: linked.id }).update({ last_used_at: now })) > 0) {
    const user = await assertUsable(trx, (await findUserById(trx, linked.userId))!, options);
    return { kind: 'signed_in', user, outcome: 'existing' };
  }

  const byEmail = identity.email
    ? await findUserByIdentifier(trx, { kind: 'email', value: identity.email })
    : undefined;
  const byPhone = identity.phone
    ? await findUserByIdentifier(trx, { kind: 'phone', value: identity.phone })
    : undefined;
  const vouched =
    (byEmail && identity.emailVerified ? byEmail : undefined) ??
    (byPhone && identity.phoneVerified ? byPhone : undefined);
  // A provider account the user unlinked is linked again only deliberately (unlinked-subjects.ts).
  const unlinkedByOwner =
    vouched !== undefined &&
    (await wasUnlinkedBy(trx, { userId: vouched.id, provider: providerId, subject: identity.subject }));
  if (vouched && unlinkedByOwner) {
    return { kind: 'confirm_link', candidate: vouched, matchedBy: vouched === byEmail ? 'email' : 'phone' };
  }
  if (vouched) {
    await assertUsable(trx, vouched, options);
    await linkProvider(trx, vouched.id, providerId, identity.subject, request, now);
    return { kind: 'signed_in', user: vouched, outcome: 'linked' };
  }
  if (byEmail) return { kind: 'confirm_link', candidate: byEmail, matchedBy: 'email' };
  if (byPhone) return { kind: 'confirm_link', candidate: byPhone, matchedBy: 'phone' };

  let user: User;
  try {
    // A savepoint: a lost race on the unique email or phone leaves the transaction usable.
    user = await trx.transaction((savepoint) =>
      insertUser(savepoint, {
        ...(identity.email && identity.emailVerified ? { email: identity.email, emailVerified: true } : {}),
        ...(identity.phone && identity.phoneVerified ? { phone: identity.phone, phoneVerified: true } : {}),
        givenName: identity.givenName,
        familyName: identity.familyName,
      }),
    );
  } catch (error) {
    if ((error as { code?: string }).code === '23505') throw new ContactTakenMeanwhile();
    throw error;
  }
  await writeAuditEvent(
    trx,
    {
      type: accountCreatedEvent,
      userId: user.id,
      ip: request.ip,
      userAgent: request.userAgent,
      details: { provider: providerId, password: false },
    },
    now,
  );
  await linkProvider(trx, user.id, providerId, identity.subject, request, now);
  return { kind: 'signed_in', user, outcome: 'created' };
}

/**
 * Attaches the provider's subject to the user as a verified, enabled method. A subject already linked
 * to another account is refused (the unique index on provider + subject also guards a race). Answers
 * whether a link was added (false: it was the user's already); the caller tells the user once committed.
 */
export async function linkProvider(
  trx: Knex.Transaction,
  userId: string,
  providerId: string,
  subject: string,
  request: RequestInfo,
  now: Date,
): Promise<boolean> {
  const existing = await findLinkedProvider(trx, providerId, subject);
  if (existing) {
    if (existing.userId === userId) return false;
    throw new FederationError('subject_linked_elsewhere');
  }
  try {
    await trx.transaction((savepoint) =>
      savepoint('user_auth_methods').insert({
        user_id: userId,
        type: 'oauth_provider',
        provider: providerId,
        external_subject: subject,
        settings: JSON.stringify({}),
        is_enabled: true,
        is_verified: true,
        last_used_at: now,
        created_at: now,
        updated_at: now,
      }),
    );
  } catch (error) {
    if ((error as { code?: string }).code === '23505') throw new FederationError('subject_linked_elsewhere');
    throw error;
  }
  await forgetUnlinkedSubject(trx, { userId, provider: providerId, subject });
  await writeAuditEvent(
    trx,
    {
      type: auditEventTypes.authMethodAdded,
      userId,
      ip: request.ip,
      userAgent: request.userAgent,
      details: { method: 'oauth_provider', provider: providerId },
    },
    now,
  );
  return true;
}
