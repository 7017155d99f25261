import { z } from 'zod';
import { ApiError } from '../../../http/api-error.js';
import type { AuthMethodPlugin, AuthMethodRegistry } from '../../auth-methods/auth-method-plugin.js';
import { findUserById, type User } from '../../users/user.js';
import { setupStepId } from '../flow-engine.js';
import type { AuthFlowStep, StepContext } from '../step.js';

const notAuthenticated = () =>
  new ApiError(401, 'invalid_credentials', 'The email, phone or password is not right.');

/**
 * Built-in step `mfa-setup`, the forced setup (spec: a mandatory step the user has not configured is
 * set up after the configured steps pass, and the login completes after it). The engine queues one
 * such step per method to set up (tempData.setupQueue); each sets up the first method of the queue.
 * Only a user who already proved a method in this flow may set one up: a funnel that identified
 * without authenticating must not let anyone attach their authenticator to someone else's account.
 */
export function createMfaSetupStep(methods: AuthMethodRegistry): AuthFlowStep<Record<string, unknown>> {
  const current = async (
    context: StepContext,
  ): Promise<{
    method: AuthMethodPlugin & { setup: NonNullable<AuthMethodPlugin['setup']> };
    user: User;
    rest: string[];
  }> => {
    const { session, db } = context;
    const authMethods = (session.tempData.authMethods as string[] | undefined) ?? [];
    const [type, ...rest] = (session.tempData.setupQueue as string[] | undefined) ?? [];
    const method = type ? methods.get(type) : undefined;
    const user = session.userId ? await findUserById(db, session.userId) : undefined;
    if (authMethods.length === 0 || !user || user.status !== 'active') throw notAuthenticated();
    if (!method?.setup) throw new Error(`forced setup of ${type ?? 'nothing'}: the method can't be set up`);
    return { method: method as never, user, rest };
  };

  return {
    id: setupStepId,
    flows: ['login'],
    input: z.looseObject({}),
    async prepare(context) {
      const { method, user } = await current(context);
      await method.setup.begin(context.db, user, context.clock.now());
    },
    async screen(context) {
      const { method, user } = await current(context);
      const view = (await method.setup.pending?.(context.db, user)) ?? {};
      return {
        title: `Set up: ${method.title}`,
        description: 'Your account must use this sign-in method. Set it up to finish signing in.',
        fields: method.setup.confirm
          ? [
              {
                name: 'code',
                type: 'one-time-code',
                label: 'Code',
                required: true,
                autocomplete: 'one-time-code',
              },
            ]
          : [],
        data: { method: method.type, ...view },
      };
    },
    async run(context, input) {
      const { method, user, rest } = await current(context);
      if (method.setup.confirm && method.setup.input) {
        await method.setup.confirm(context.db, user, method.setup.input.parse(input), context.clock.now());
      }
      return {
        userId: user.id,
        tempData: { setupQueue: rest },
        ...(method.setup.confirm ? { authMethod: 'otp' } : {}),
      };
    },
  };
}
