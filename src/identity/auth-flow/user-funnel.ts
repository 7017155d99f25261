import type { Queryable } from '../../db/database.js';
import { settingValue, storedSettingRead } from '../../platform/settings/platform-settings.js';
import type { AuthMethodRegistry } from '../auth-methods/auth-method-plugin.js';
import type { AuthMethodType } from '../auth-methods/auth-method-type.js';
import { loadUserMethodStatesWith, type UserMethodStates } from '../auth-methods/user-method-states.js';
import { allowedMethodsSetting } from './allowed-methods.js';
import type { FunnelStep } from './funnel-steps.js';

/** A user's own funnel for the rest of a login, and the methods to set up after it (forced setup). */
export interface PersonalizedFunnel {
  steps: FunnelStep[];
  setups: AuthMethodType[];
}

export interface PersonalizeInput {
  states: UserMethodStates;
  allowedMethods: readonly string[];
  methods: AuthMethodRegistry;
  /** What the user typed to identify (email or phone): decides which code method `otp-code` proves. */
  identifierKind?: string | undefined;
  /** A step already done proved a method (then setups are safe even if nothing else is asked). */
  alreadyAuthenticated: boolean;
}

/**
 * The final funnel of a user (spec: mandatory steps + the non-mandatory steps the user did not disable
 * + the additional methods the user enabled):
 *
 * - a step that proves no method (consent, ...) always runs;
 * - a method step runs when the user has the method configured, unless it is non-mandatory and the
 *   user turned the method off;
 * - a mandatory method step the user has not configured becomes a forced setup after the other steps
 *   (when the method can be set up; otherwise it stays and fails like a wrong credential);
 * - allowed additional methods the user enabled are appended.
 *
 * It never returns a funnel that authenticates nobody: if the user's choices would leave no method
 * step (and none was passed), the configured funnel applies unchanged.
 */
export function personalizeFunnel(remaining: FunnelStep[], input: PersonalizeInput): PersonalizedFunnel {
  const { states, methods, identifierKind } = input;
  const steps: FunnelStep[] = [];
  const setups: AuthMethodType[] = [];
  for (const step of remaining) {
    const method = methods.forStep(step.stepId, identifierKind);
    if (!method) {
      steps.push(step);
    } else if (states.isConfigured(method.type)) {
      if (step.mandatory || !states.isDisabled(method.type)) steps.push(step);
    } else if (step.mandatory) {
      if (method.setup) setups.push(method.type);
      else steps.push(step);
    }
  }
  const lastOrder = Math.max(0, ...remaining.map((step) => step.order));
  for (const slug of input.allowedMethods) {
    const method = methods.get(slug);
    if (!method || !states.isEnabledByUser(method.type)) continue;
    if (steps.some((step) => step.stepId === method.stepId)) continue;
    steps.push({ stepId: method.stepId, mandatory: false, order: lastOrder + steps.length + 1 });
  }
  const authenticates =
    input.alreadyAuthenticated ||
    steps.some((step) => methods.forStep(step.stepId, identifierKind) !== undefined);
  if (!authenticates) return { steps: remaining, setups: [] };
  return { steps, setups };
}

/** Loads what personalizing needs (the user's methods, the allowed methods) from storage, in one read. */
export class UserFunnelPlanner {
  constructor(readonly methods: AuthMethodRegistry) {}

  async personalize(
    db: Queryable,
    remaining: FunnelStep[],
    user: { userId: string; identifierKind?: string | undefined; alreadyAuthenticated: boolean },
  ): Promise<PersonalizedFunnel> {
    const { states, allowedMethods } = await this.#load(db, user.userId);
    return personalizeFunnel(remaining, {
      states,
      allowedMethods,
      methods: this.methods,
      identifierKind: user.identifierKind,
      alreadyAuthenticated: user.alreadyAuthenticated,
    });
  }

  /**
   * The methods the user's own login would ask them to prove: the whole configured `funnel`,
   * personalized as after they typed their email, or their phone (that decides which method a code
   * proves), whichever asks more. Only methods the user has count: a step for one they don't have
   * asks nothing they could give. With the user's method states (one read).
   */
  async methodsAskedAtLogin(
    db: Queryable,
    funnel: FunnelStep[],
    user: { id: string; email: string | null; phone: string | null },
  ): Promise<{ methods: AuthMethodType[]; states: UserMethodStates }> {
    const { asked, states } = await this.methodsAskedByIdentifier(db, funnel, user);
    let methods: AuthMethodType[] = [];
    for (const types of asked.values()) if (types.size > methods.length) methods = [...types];
    return { methods, states };
  }

  /**
   * The methods the user's login would ask them to prove, for each way they can identify (`email`,
   * `phone`, or `none` for a user with neither): the configured `funnel` personalized as after they
   * typed it, the methods they have among its steps. With the user's method states (one read).
   */
  async methodsAskedByIdentifier(
    db: Queryable,
    funnel: FunnelStep[],
    user: { id: string; email: string | null; phone: string | null },
  ): Promise<{ asked: Map<string, Set<AuthMethodType>>; states: UserMethodStates }> {
    const { states, allowedMethods } = await this.#load(db, user.id);
    const kinds = [user.email ? 'email' : undefined, user.phone ? 'phone' : undefined].filter(
      (kind): kind is string => kind !== undefined,
    );
    const asked = new Map<string, Set<AuthMethodType>>();
    for (const identifierKind of kinds.length > 0 ? kinds : [undefined]) {
      const { steps } = personalizeFunnel(funnel, {
        states,
        allowedMethods,
        methods: this.methods,
        identifierKind,
        alreadyAuthenticated: false,
      });
      asked.set(
        identifierKind ?? 'none',
        new Set(
          steps
            .map((step) => this.methods.forStep(step.stepId, identifierKind)?.type)
            .filter((type): type is AuthMethodType => type !== undefined && states.isConfigured(type)),
        ),
      );
    }
    return { asked, states };
  }

  async #load(db: Queryable, userId: string) {
    // The user's methods and the allowed methods in one statement.
    const { states, read } = await loadUserMethodStatesWith(
      db,
      userId,
      storedSettingRead(allowedMethodsSetting),
    );
    const allowedMethods = settingValue(allowedMethodsSetting, read as { value: unknown } | null);
    return { states, allowedMethods };
  }
}
