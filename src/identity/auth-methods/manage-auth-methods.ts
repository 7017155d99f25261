import type { Knex } from 'knex';
import type { Database } from '../../db/database.js';
import { ApiError } from '../../http/api-error.js';
import { readSetting } from '../../platform/settings/platform-settings.js';
import { auditEventTypes, writeAuditEvent } from '../audit/audit-log.js';
import type { RequestInfo } from '../auth-flow/step.js';
import { allowedMethodsSetting } from '../auth-flow/allowed-methods.js';
import { loadFunnel, type FunnelStep } from '../auth-flow/funnel-steps.js';
import type { SecurityNotifications } from '../notifications/security-notifications.js';
import { findUserById, type User } from '../users/user.js';
import type { AuthMethodPlugin, AuthMethodRegistry } from './auth-method-plugin.js';
import type { AuthMethodType } from './auth-method-type.js';
import { removeTotp } from './totp-method.js';
import { signOutElsewhere } from './sign-out-elsewhere.js';
import { saveUserAuthMethod } from './user-auth-methods.js';
import { loadUserMethodStates, type UserMethodStates } from './user-method-states.js';

/** A method as the security settings list it. */
export interface AuthMethodView {
  type: AuthMethodType;
  title: string;
  /** The user has what it needs (a password, a verified contact, a confirmed secret). */
  configured: boolean;
  /** Usable at login: configured, not turned off, and asked for (by the funnel or as the user's own addition). */
  enabled: boolean;
  /** A setup was begun and waits for its confirmation. */
  pendingVerification: boolean;
  /** The login funnel requires it: it can't be turned off. */
  mandatory: boolean;
  lastUsedAt: Date | null;
}

type SingleMethodType = Exclude<AuthMethodType, 'oauth_provider'>;

const unknownMethod = (type: string) =>
  new ApiError(404, 'unknown_method', `There is no sign-in method ${type}.`, { type });

/**
 * The user's sign-in methods in the security settings (spec: /security/auth-methods), with the account
 * rules: a mandatory method of the login funnel can't be turned off, and at least one sign-in method
 * must stay usable (rule 5). Every change is written to the audit log (identity.auth_method.added /
 * removed) in its transaction, and the user is told of it once it is committed. Changes run in a
 * transaction that first locks the user's row, so two parallel removals can't each leave the other as
 * "the last one" and end with none.
 */
export class AuthMethodManager {
  constructor(
    private readonly db: Database,
    private readonly methods: AuthMethodRegistry,
    private readonly notifications: SecurityNotifications,
  ) {}

  async list(userId: string): Promise<{ methods: AuthMethodView[]; available: AuthMethodType[] }> {
    const [states, loginFunnel, allowed] = await Promise.all([
      loadUserMethodStates(this.db, userId),
      loadFunnel(this.db, 'login'),
      readSetting(this.db, allowedMethodsSetting),
    ]);
    const views = this.methods
      .all()
      .filter((method) => states.isConfigured(method.type) || states.row(method.type))
      .map((method) => this.#view(method, states, loginFunnel));
    const available = this.methods
      .all()
      .filter((method) => method.setup && this.#maySetUp(method, allowed, loginFunnel))
      .filter((method) => !states.isEnabledByUser(method.type))
      .map((method) => method.type);
    return { methods: views, available };
  }

  /** Begins setting a method up (or turns a turned-off one back on); answers what to show the user. */
  async setUp(
    userId: string,
    type: string,
    request: RequestInfo,
    now: Date,
  ): Promise<Record<string, unknown>> {
    const method = this.methods.get(type);
    if (!method) throw unknownMethod(type);
    let enabledFor: User | undefined;
    const shown = await this.#change(userId, async (trx, user, states, loginFunnel) => {
      if (method.setup) {
        const allowed = await readSetting(trx, allowedMethodsSetting);
        if (!this.#maySetUp(method, allowed, loginFunnel)) {
          throw new ApiError(403, 'method_not_allowed', `The sign-in method ${method.type} is not offered.`, {
            type: method.type,
          });
        }
        const shown = await method.setup.begin(trx, user, now);
        if (!method.setup.confirm) {
          await this.#audit(trx, userId, method.type, 'added', request, now);
          enabledFor = user;
        }
        return {
          type: method.type,
          status: method.setup.confirm ? 'pending_verification' : 'enabled',
          ...shown,
        };
      }
      // A method without a setup of its own (the password) can only be turned back on here.
      if (states.isConfigured(method.type) && states.isDisabled(method.type)) {
        await saveUserAuthMethod(
          trx,
          userId,
          method.type as SingleMethodType,
          { isEnabled: true, isVerified: true },
          now,
        );
        await this.#audit(trx, userId, method.type, 'added', request, now);
        enabledFor = user;
        return { type: method.type, status: 'enabled' };
      }
      throw new ApiError(
        409,
        method.type === 'password' ? 'password_not_set' : 'method_not_allowed',
        method.type === 'password'
          ? 'Set a password through the password change or reset.'
          : `The sign-in method ${method.type} can't be set up here.`,
        { type: method.type },
      );
    });
    if (enabledFor) this.notifications.notify(enabledFor, { kind: 'auth_method_added', method: method.type });
    return shown;
  }

  /** Confirms a setup (e.g. the first TOTP code). */
  async confirm(
    userId: string,
    type: string,
    input: unknown,
    request: RequestInfo,
    now: Date,
  ): Promise<void> {
    const method = this.methods.get(type);
    if (!method) throw unknownMethod(type);
    const setup = method.setup;
    if (!setup?.confirm || !setup.input) {
      throw new ApiError(409, 'nothing_to_verify', `The sign-in method ${type} needs no confirmation.`);
    }
    const parsed = setup.input.parse(input);
    const user = await this.#change(userId, async (trx, user) => {
      await setup.confirm!(trx, user, parsed, now);
      await this.#audit(trx, userId, method.type, 'added', request, now);
      return user;
    });
    this.notifications.notify(user, { kind: 'auth_method_added', method: method.type });
  }

  /**
   * Turns a method off (a password or a code method) or removes it (TOTP), and signs out everywhere but
   * `keptSessionId` (the session making the change): whoever signed in with it (a leaked TOTP secret)
   * must not keep that session (ASVS 5 7.4.3).
   */
  async remove(
    userId: string,
    type: string,
    request: RequestInfo,
    now: Date,
    keptSessionId?: string,
  ): Promise<void> {
    const method = this.methods.get(type);
    if (!method) throw unknownMethod(type);
    const user = await this.#change(userId, async (trx, user, states, loginFunnel) => {
      const row = states.row(method.type);
      if (!states.isConfigured(method.type) && !row) throw unknownMethod(type);
      if (this.#view(method, states, loginFunnel).mandatory) {
        throw new ApiError(
          409,
          'method_mandatory',
          'This sign-in method is required by the login settings and can’t be turned off.',
          { type: method.type },
        );
      }
      if (method.removal === 'delete' && row) {
        if (method.type === 'totp') await removeTotp(trx, row);
        else await trx('user_auth_methods').where({ id: row.id }).delete();
      } else {
        await saveUserAuthMethod(
          trx,
          userId,
          method.type as SingleMethodType,
          { isEnabled: false, isVerified: states.isConfigured(method.type) },
          now,
        );
      }
      const after = await loadUserMethodStates(trx, userId);
      const allowed = await readSetting(trx, allowedMethodsSetting);
      if (!this.#hasUsableSignInMethod(after, loginFunnel, allowed)) {
        throw new ApiError(
          409,
          'last_sign_in_method',
          'At least one sign-in method must stay active: add another one before turning this one off.',
          { type: method.type },
        );
      }
      await signOutElsewhere(trx, userId, keptSessionId, now);
      await this.#audit(trx, userId, method.type, 'removed', request, now);
      return user;
    });
    this.notifications.notify(user, { kind: 'auth_method_removed', method: method.type });
  }

  #audit(
    trx: Knex.Transaction,
    userId: string,
    type: AuthMethodType,
    action: 'added' | 'removed',
    request: RequestInfo,
    now: Date,
  ): Promise<void> {
    return writeAuditEvent(
      trx,
      {
        type: action === 'added' ? auditEventTypes.authMethodAdded : auditEventTypes.authMethodRemoved,
        userId,
        ip: request.ip,
        userAgent: request.userAgent,
        details: { method: type },
      },
      now,
    );
  }

  async #change<T>(
    userId: string,
    change: (
      trx: Knex.Transaction,
      user: User,
      states: UserMethodStates,
      loginFunnel: FunnelStep[],
    ) => Promise<T>,
  ): Promise<T> {
    return this.db.transaction(async (trx) => {
      await trx('users').where({ id: userId }).forUpdate().first('id');
      const user = await findUserById(trx, userId);
      if (!user || user.status !== 'active')
        throw new ApiError(401, 'unauthorized', 'This account is no longer available.');
      const [states, loginFunnel] = [await loadUserMethodStates(trx, userId), await loadFunnel(trx, 'login')];
      return change(trx, user, states, loginFunnel);
    });
  }

  #view(method: AuthMethodPlugin, states: UserMethodStates, loginFunnel: FunnelStep[]): AuthMethodView {
    const row = states.row(method.type);
    return {
      type: method.type,
      title: method.title,
      configured: states.isConfigured(method.type),
      enabled:
        states.isActive(method.type) &&
        (loginFunnel.some((step) => step.stepId === method.stepId) || states.isEnabledByUser(method.type)),
      pendingVerification: Boolean(row && !row.isVerified),
      mandatory: loginFunnel.some((step) => step.stepId === method.stepId && step.mandatory),
      lastUsedAt: row?.lastUsedAt ?? null,
    };
  }

  /** Allowed as an additional method, or part of the login funnel (so its forced setup can be done early). */
  #maySetUp(method: AuthMethodPlugin, allowed: readonly string[], loginFunnel: FunnelStep[]): boolean {
    return allowed.includes(method.type) || loginFunnel.some((step) => step.stepId === method.stepId);
  }

  /** Rule 5: some method the user can sign in with stays: active, and asked for by the login funnel. */
  #hasUsableSignInMethod(
    states: UserMethodStates,
    loginFunnel: FunnelStep[],
    allowed: readonly string[],
  ): boolean {
    return this.methods
      .all()
      .some(
        (method) =>
          states.isActive(method.type) &&
          (loginFunnel.some((step) => step.stepId === method.stepId) ||
            (allowed.includes(method.type) && states.isEnabledByUser(method.type))),
      );
  }
}
