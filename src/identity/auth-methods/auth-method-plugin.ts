import type { z } from 'zod';
import type { Queryable } from '../../db/database.js';
import type { User } from '../users/user.js';
import type { AuthMethodType } from './auth-method-type.js';

/**
 * Setting a method up from the security settings or as the forced setup of a login: `begin` answers
 * what the user needs to see (e.g. a TOTP secret), `confirm` proves the setup worked (a code). Methods
 * without `confirm` are usable as soon as `begin` returns.
 */
export interface AuthMethodSetup {
  begin(db: Queryable, user: User, now: Date): Promise<Record<string, unknown>>;
  /** The setup already begun, shown again (a re-rendered screen); undefined when none is pending. */
  pending?(db: Queryable, user: User): Promise<Record<string, unknown> | undefined>;
  input?: z.ZodType<{ code: string }>;
  confirm?(db: Queryable, user: User, input: { code: string }, now: Date): Promise<void>;
}

/**
 * A kind of sign-in method (spec: plugin kind auth_method): the auth-flow step that asks for it at
 * login, and how a user sets it up and turns it off. The `type` is the slug administrators list in
 * allowedMethods.
 */
export interface AuthMethodPlugin {
  type: AuthMethodType;
  title: string;
  /** The step that proves this method at login. */
  stepId: string;
  /** Codes sent to the identifier prove the email or the phone method, depending on what was typed. */
  identifierKind?: 'email' | 'phone';
  setup?: AuthMethodSetup;
  /**
   * Turning it off: `delete` removes the method with its secret (TOTP); `disable` keeps what it derives
   * from (the password credential, the verified contact) and only takes it out of the login.
   */
  removal: 'delete' | 'disable';
}

export class AuthMethodRegistry {
  readonly #methods = new Map<string, AuthMethodPlugin>();

  register(method: AuthMethodPlugin): this {
    if (this.#methods.has(method.type)) throw new Error(`auth method ${method.type} is already registered`);
    this.#methods.set(method.type, method);
    return this;
  }

  get(type: string): AuthMethodPlugin | undefined {
    return this.#methods.get(type);
  }

  all(): AuthMethodPlugin[] {
    return [...this.#methods.values()];
  }

  /** The method a funnel step proves, if it proves one (codes: the identifier's kind decides). */
  forStep(stepId: string, identifierKind?: string): AuthMethodPlugin | undefined {
    const candidates = this.all().filter((method) => method.stepId === stepId);
    if (candidates.length <= 1) return candidates[0];
    return candidates.find((method) => method.identifierKind === identifierKind) ?? candidates[0];
  }
}
