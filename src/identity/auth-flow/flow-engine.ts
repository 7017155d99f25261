import type { Knex } from 'knex';
import type { Clock } from '../../clock.js';
import type { Database, Queryable } from '../../db/database.js';
import { defaults } from '../../defaults.js';
import { ApiError } from '../../http/api-error.js';
import { requestFrom } from '../../http/request-info.js';
import {
  advanceFlowSession,
  createFlowSession,
  endFlowSession,
  findFlowSession,
  type FlowBinding,
  type FlowContext,
  type FlowKind,
  type FlowPlan,
  type FlowSession,
} from './flow-session.js';
import type { PasswordHashing } from '../passwords/password-hash.js';
import { forcedSetupStepId } from './built-in-steps.js';
import type { FunnelStep } from './funnel-steps.js';
import { fallbackScreen } from './step-screens.js';
import type { RequestInfo, StepContext, StepScreen } from './step.js';
import type { StepRegistry } from './step-registry.js';
import type { UserFunnelPlanner } from './user-funnel.js';

/** Which steps a flow runs, in order (the funnel). */
export interface FunnelSource {
  stepsFor(flow: FlowKind): Promise<string[]>;
  /** The funnel with its flags; when absent, every step of `stepsFor` is mandatory and alone on its screen. */
  funnelFor?(flow: FlowKind): Promise<FunnelStep[]>;
}

/** The base funnel (spec: works out of the box): identify by email or phone, then password. */
export const baseFunnels: FunnelSource = {
  async stepsFor(flow) {
    if (flow === 'login') return ['phone-email', 'password'];
    throw new ApiError(400, 'flow_not_available', `The ${flow} flow is not available.`);
  },
};

export interface FlowInProgress {
  status: 'in_progress';
  session: FlowSession;
  /** The step the client shows next (the first of `screen`). */
  nextStep: string;
  /** The steps shown together on the next screen (one unless the funnel groups steps). */
  screen: string[];
}

export interface FlowCompleted {
  status: 'completed';
  flow: FlowKind;
  userId: string;
  /** Authentication methods proven along the way (OIDC amr values). */
  authMethods: string[];
  /**
   * When the user authenticated, if not now: every proof of the flow was made earlier (a QR approval
   * by a session that signed in earlier); the latest of them. Undefined when a step proved it now.
   */
  authenticatedAt?: Date | undefined;
  /**
   * The main-auth session that vouched for this sign-in (a QR approval): the session started here
   * ends with it (sessions.ts, revokeSessionsWhere).
   */
  startedBySessionId?: string | undefined;
  context: FlowContext;
}

export type FlowOutcome = FlowInProgress | FlowCompleted;

/**
 * Ends a flow of one kind inside the completing transaction: registration creates the account from
 * what its steps gathered and answers the new user's id.
 */
export type FlowFinisher = (trx: Knex.Transaction, session: FlowSession, now: Date) => Promise<string>;

export interface AuthFlowEngineOptions {
  /** Makes a login's funnel the identified user's own; absent = the configured funnel for everyone. */
  planner?: UserFunnelPlanner;
  finishers?: Partial<Record<FlowKind, FlowFinisher>>;
  /** Default: src/defaults.ts passwordHashing. */
  passwordHashing?: PasswordHashing;
}

export interface SubmitOptions<Completion> {
  binding?: FlowBinding;
  /**
   * Runs in the transaction that ends the flow (e.g. creates the main-auth session): if it throws, the
   * flow is not ended and the user can submit the last step again.
   */
  onComplete?: (trx: Knex.Transaction, completed: FlowCompleted) => Promise<Completion>;
}

/** The id of the forced-setup step (spec: built-in step mfa-setup), which only the engine queues. */
export const setupStepId = forcedSetupStepId;

const flowSessionInvalid = () =>
  new ApiError(
    410,
    'flow_session_invalid',
    'This sign-in attempt has expired or was already used. Start again.',
  );

const accountMismatch = () =>
  new ApiError(
    401,
    'account_mismatch',
    'This sign-in already proved who you are: it can’t go on as another account. Start again.',
  );

/**
 * Runs login and registration flows as data: a funnel of step ids, each step from the registry, the
 * state between steps in a server-side flow session whose id is single-use. The OIDC login interaction
 * and the /auth/flow API both run flows through this engine.
 */
export class AuthFlowEngine {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly steps: StepRegistry,
    private readonly funnels: FunnelSource = baseFunnels,
    private readonly options: AuthFlowEngineOptions = {},
  ) {}

  async #funnel(flow: FlowKind): Promise<FunnelStep[]> {
    if (this.funnels.funnelFor) return this.funnels.funnelFor(flow);
    const ids = await this.funnels.stepsFor(flow);
    return ids.map((stepId, index) => ({ stepId, mandatory: true, order: index }));
  }

  async start(flow: FlowKind, context: FlowContext, request?: RequestInfo): Promise<FlowInProgress> {
    const funnel = await this.#funnel(flow);
    if (funnel.length === 0) {
      throw new ApiError(400, 'flow_not_available', `The ${flow} flow is not available.`);
    }
    const unknown = funnel.filter((step) => !this.steps.has(step.stepId, flow)).map((step) => step.stepId);
    if (unknown.length > 0)
      throw new Error(`the ${flow} funnel names unregistered steps: ${unknown.join(', ')}`);
    const plan: FlowPlan = {
      steps: Object.fromEntries(
        funnel.map((step) => [
          step.stepId,
          { mandatory: step.mandatory, group: step.group, settings: step.settings },
        ]),
      ),
    };
    const pendingSteps = funnel.map((step) => step.stepId);
    const now = this.clock.now();
    const draft: FlowSession = {
      id: '',
      flow,
      completedSteps: [],
      pendingSteps,
      tempData: {},
      userId: undefined,
      context,
      expiresAt: now,
      plan,
    };
    const info = request ?? requestFrom(context.ip ?? '', context.userAgent ?? '');
    const tempData = await this.#prepare(draft, info);
    const session = await createFlowSession(this.db, flow, pendingSteps, context, now, plan, tempData);
    return { status: 'in_progress', session, nextStep: pendingSteps[0]!, screen: this.screenOf(session) };
  }

  /** The live session with this id, checked against the context it must belong to. */
  async resume(sessionId: string, binding: FlowBinding = {}): Promise<FlowSession> {
    const session = await findFlowSession(this.db, sessionId, this.clock.now());
    if (
      !session ||
      session.context.interactionUid !== binding.interactionUid ||
      session.context.browser !== binding.browser
    )
      throw flowSessionInvalid();
    return session;
  }

  /** The flow as it stands: the session and the next screen. */
  inProgress(session: FlowSession): FlowInProgress {
    const screen = this.screenOf(session);
    return { status: 'in_progress', session, nextStep: screen[0]!, screen };
  }

  /** The steps of the next screen: the first pending step and the following ones of its group. */
  screenOf(session: Pick<FlowSession, 'pendingSteps' | 'plan'>): string[] {
    const [first, ...rest] = session.pendingSteps;
    if (first === undefined) return [];
    const group = session.plan.steps?.[first]?.group;
    if (!group) return [first];
    const screen = [first];
    for (const stepId of rest) {
      if (session.plan.steps?.[stepId]?.group !== group) break;
      screen.push(stepId);
    }
    return screen;
  }

  /** What the client shows for each step of the next screen. */
  async describe(flow: FlowInProgress, request: RequestInfo): Promise<(StepScreen & { stepId: string })[]> {
    return Promise.all(
      flow.screen.map(async (stepId) => {
        const step = this.steps.get(stepId, flow.session.flow)!;
        const context = this.#context(flow.session, request);
        const screen = step.screen ? await step.screen(context) : fallbackScreen(stepId, flow.session);
        return { stepId, ...screen };
      }),
    );
  }

  /** Submits one step (the next screen must be that step alone). */
  async submit(
    sessionId: string,
    stepId: string,
    rawInput: unknown,
    request: RequestInfo,
    binding: FlowBinding = {},
  ): Promise<FlowOutcome> {
    return this.submitScreen(sessionId, { [stepId]: rawInput }, request, { binding });
  }

  /**
   * Submits the next screen: the input of each of its steps, by step id. The steps run in order, later
   * ones seeing what earlier ones found; if one refuses, nothing of the screen is kept.
   */
  async submitScreen<Completion = undefined>(
    sessionId: string,
    inputs: Record<string, unknown>,
    request: RequestInfo,
    options: SubmitOptions<Completion> = {},
  ): Promise<FlowInProgress | (FlowCompleted & { completion: Completion | undefined })> {
    const session = await this.resume(sessionId, options.binding);
    const screen = this.screenOf(session);
    const submitted = Object.keys(inputs);
    if (submitted.length !== screen.length || !screen.every((stepId) => submitted.includes(stepId))) {
      const expected = screen.join(', ');
      throw new ApiError(
        409,
        'step_out_of_order',
        `The next step of this flow is ${expected}, not ${submitted.join(', ') || 'nothing'}.`,
        { expectedStep: screen[0], expectedSteps: screen },
      );
    }

    const state: FlowSession = { ...session, tempData: { ...session.tempData } };
    const authMethods = [...((session.tempData.authMethods as string[] | undefined) ?? [])];
    // Before any step of this screen checks a password or a code: a sign-out everywhere after this
    // moment ends the flow (#complete).
    const screenStartedAt = this.clock.now();
    for (const stepId of screen) {
      const step = this.steps.get(stepId, session.flow)!;
      const input = step.input.parse(inputs[stepId] ?? {});
      const result = await step.run(this.#context(state, request), input);
      // A proof is of the account it proved: once a step proved who signs in, no later step (an
      // identifying one placed after a provider or a QR approval) may turn the flow to someone else,
      // or the rest of that person's funnel would finish on the first account's proof.
      if (
        'userId' in result &&
        authMethods.length > 0 &&
        state.userId !== undefined &&
        result.userId !== state.userId
      ) {
        throw accountMismatch();
      }
      if (result.authMethod && !authMethods.includes(result.authMethod)) authMethods.push(result.authMethod);
      state.tempData = { ...state.tempData, ...result.tempData, authMethods };
      // Only a step that proves who the person is dates the sign-in: a forced setup (mfa-setup) after a
      // QR approval proves a new authenticator, not that the approver's old sign-in is fresh.
      if (result.authMethod && step.authenticates) {
        state.tempData = withProofTime(state.tempData, result.authenticatedAt);
      }
      if ('userId' in result) state.userId = result.userId;
    }
    state.completedSteps = [...session.completedSteps, ...screen];
    state.pendingSteps = session.pendingSteps.slice(screen.length);
    await this.#personalize(state, authMethods.length > 0);

    if (state.pendingSteps.length === 0)
      return this.#complete(state, authMethods, screenStartedAt, options.onComplete);

    state.tempData = { ...state.tempData, ...(await this.#prepare(state, request)) };
    const advanced = await advanceFlowSession(this.db, session, state, this.clock.now());
    if (!advanced) throw flowSessionInvalid();
    return this.inProgress(advanced);
  }

  #context(session: FlowSession, request: RequestInfo): StepContext {
    const passwordHashing = this.options.passwordHashing ?? defaults.passwordHashing;
    return { db: this.db, clock: this.clock, passwordHashing, session, request };
  }

  /** Runs the `prepare` of the next screen's steps; answers the tempData they add. */
  async #prepare(session: FlowSession, request: RequestInfo): Promise<Record<string, unknown>> {
    let tempData = session.tempData;
    for (const stepId of this.screenOf(session)) {
      const step = this.steps.get(stepId, session.flow);
      if (!step?.prepare) continue;
      const result = await step.prepare(this.#context({ ...session, tempData }, request));
      if (result?.tempData) tempData = { ...tempData, ...result.tempData };
    }
    return tempData;
  }

  /**
   * Once a login knows its user, the rest of the funnel becomes the user's own (user-disabled and
   * user-added steps, forced setups). Done once per user per flow.
   */
  async #personalize(state: FlowSession, authenticated: boolean): Promise<void> {
    const { planner } = this.options;
    const userId = state.userId;
    if (!planner || state.flow !== 'login' || !userId || state.plan.personalizedFor === userId) return;
    const flags = state.plan.steps ?? {};
    const remaining: FunnelStep[] = state.pendingSteps.map((stepId, index) => ({
      stepId,
      mandatory: flags[stepId]?.mandatory ?? true,
      order: index,
      group: flags[stepId]?.group,
    }));
    const personalized = await planner.personalize(this.db, remaining, {
      userId,
      identifierKind: state.tempData.identifierKind as string | undefined,
      alreadyAuthenticated: authenticated,
    });
    const steps = Object.fromEntries([
      ...Object.entries(flags),
      ...personalized.steps.map((step) => [
        step.stepId,
        { mandatory: step.mandatory, group: step.group, settings: flags[step.stepId]?.settings },
      ]),
      [setupStepId, { mandatory: true }],
    ]);
    state.pendingSteps = [
      ...personalized.steps.map((step) => step.stepId),
      ...personalized.setups.map(() => setupStepId),
    ];
    state.plan = { ...state.plan, steps, personalizedFor: userId };
    state.tempData = { ...state.tempData, setupQueue: personalized.setups };
  }

  async #complete<Completion>(
    state: FlowSession,
    authMethods: string[],
    screenStartedAt: Date,
    onComplete: SubmitOptions<Completion>['onComplete'],
  ): Promise<FlowCompleted & { completion: Completion | undefined }> {
    return this.db.transaction(async (trx) => {
      // The user's row, held until the session is committed: a sign-out everywhere (a password change,
      // revoke-all) takes it first, so it either waits and then ends this session, or came first and
      // this flow, whose steps ran before it (the old password), ends here. Without it a flow whose last
      // screen named the account and checked its password (no user on the flow's row yet) went unseen
      // by the sign-out and kept its new session.
      if (state.userId !== undefined && (await signedOutSince(trx, state.userId, screenStartedAt))) {
        throw flowSessionInvalid();
      }
      // The last step: the session ends here; a replay of this request finds it gone.
      if (!(await endFlowSession(trx, state.id))) throw flowSessionInvalid();
      const finisher = this.options.finishers?.[state.flow];
      const userId = finisher ? await finisher(trx, state, this.clock.now()) : state.userId;
      if (!userId) throw new Error(`the ${state.flow} flow ended without identifying a user`);
      if (state.flow === 'login' && authMethods.length === 0) {
        throw new Error('the login funnel ended without a step that authenticates the user');
      }
      const completed: FlowCompleted = {
        status: 'completed',
        flow: state.flow,
        userId,
        authMethods,
        authenticatedAt: authenticatedAtOf(state.tempData),
        startedBySessionId:
          typeof state.tempData.startedBySessionId === 'string'
            ? state.tempData.startedBySessionId
            : undefined,
        context: state.context,
      };
      const completion = onComplete ? await onComplete(trx, completed) : undefined;
      return { ...completed, completion };
    });
  }
}

/**
 * Records when a step's proof was made in the flow's tempData: `freshProof` once any step proved now,
 * else `proofAt`, the latest earlier proof (epoch milliseconds).
 */
function withProofTime(tempData: Record<string, unknown>, at: Date | undefined): Record<string, unknown> {
  if (at === undefined) return { ...tempData, freshProof: true };
  const previous = typeof tempData.proofAt === 'number' ? tempData.proofAt : 0;
  return { ...tempData, proofAt: Math.max(previous, at.getTime()) };
}

/** When the flow's user authenticated, if every proof was made earlier; undefined: now. */
function authenticatedAtOf(tempData: Record<string, unknown>): Date | undefined {
  if (tempData.freshProof === true || typeof tempData.proofAt !== 'number') return undefined;
  return new Date(tempData.proofAt);
}

/**
 * Whether the user was signed out everywhere after `since`, read holding their row (FOR SHARE) until
 * the caller's transaction ends: a sign-out everywhere (revokeUserSessions) writes it first. Strictly
 * after: a sign-in begun in the very millisecond of the sign-out (always, under a clock that does not
 * move) is not refused for it; one whose steps ran before the sign-out committed began before it.
 */
async function signedOutSince(trx: Queryable, userId: string, since: Date): Promise<boolean> {
  const row: { signed_out_everywhere_at: Date | string | null } | undefined = await trx('users')
    .where({ id: userId })
    .forShare()
    .first('signed_out_everywhere_at');
  const at = row?.signed_out_everywhere_at;
  return at !== undefined && at !== null && new Date(at).getTime() > since.getTime();
}
