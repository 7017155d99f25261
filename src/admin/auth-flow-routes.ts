import { z } from 'zod';
import type { Clock } from '../clock.js';
import type { Database } from '../db/database.js';
import { ApiError } from '../http/api-error.js';
import { principalOf, requirePermission } from '../http/bearer-auth.js';
import { allowedMethodsSetting } from '../identity/auth-flow/allowed-methods.js';
import { forcedSetupStepId } from '../identity/auth-flow/built-in-steps.js';
import { flowKinds, type FlowKind } from '../identity/auth-flow/flow-session.js';
import { funnelStepSchema, loadFunnel, replaceFunnel } from '../identity/auth-flow/funnel-steps.js';
import type { StepRegistry } from '../identity/auth-flow/step-registry.js';
import { UserFunnelPlanner } from '../identity/auth-flow/user-funnel.js';
import type { AuthMethodRegistry } from '../identity/auth-methods/auth-method-plugin.js';
import { readSetting, writeSetting } from '../platform/settings/platform-settings.js';
import { adminAuditEventTypes, auditAdminChange } from './admin-audit.js';
import type { AdminRoutes } from './admin-api.js';
import { requireWeakensNobodyAbove } from './sign-in-authority.js';

export const manageAuthFlowPermission = 'identity.auth_flow.manage';

const funnelSchema = z
  .object({ flow: z.enum(flowKinds), steps: z.array(funnelStepSchema) })
  .meta({ id: 'Funnel' });
const allowedMethodsSchema = z
  .object({ methods: z.array(z.string()).describe('auth_method plugin slugs users may enable') })
  .meta({ id: 'AllowedMethods' });
const flowParams = z.object({ flow: z.enum(flowKinds).describe('login or registration') });

const errors = {
  400: { description: 'Bad input (the JSON error body names the fields)' },
  401: { description: 'No valid access token, or (changes) no recent authentication' },
  403: {
    description:
      'The token does not carry identity.auth_flow.manage, or (changes) the login of someone holding ' +
      'permissions the token’s user does not would ask them for less',
  },
};

/**
 * Checks a funnel against the registered steps before it is stored: every step exists for the flow,
 * none twice, at least one, not the engine's own forced setup, and a login funnel has a step that
 * proves who signs in. What the flow engine would otherwise find out at every user's sign-in (a login
 * funnel of phone-email alone failed every sign-in with a 500).
 */
export function funnelProblems(
  steps: z.infer<typeof funnelStepSchema>[],
  flow: FlowKind,
  registry: StepRegistry,
): { path: string; message: string }[] {
  const problems: { path: string; message: string }[] = [];
  if (steps.length === 0) problems.push({ path: 'steps', message: 'a funnel has at least one step' });
  const seen = new Set<string>();
  steps.forEach((step, index) => {
    if (step.stepId === forcedSetupStepId) {
      problems.push({
        path: `steps.${index}.stepId`,
        message: `${forcedSetupStepId} is added by the service after a login's steps when a mandatory method is not set up yet; a funnel does not name it`,
      });
    } else if (!registry.has(step.stepId, flow)) {
      problems.push({
        path: `steps.${index}.stepId`,
        message: `no step ${step.stepId} serves the ${flow} flow`,
      });
    }
    const settingsProblem = registry.get(step.stepId, flow)?.checkSettings?.(step.settings);
    if (settingsProblem) problems.push({ path: `steps.${index}.settings`, message: settingsProblem });
    if (seen.has(step.stepId))
      problems.push({ path: `steps.${index}.stepId`, message: `${step.stepId} appears twice` });
    seen.add(step.stepId);
  });
  if (
    flow === 'login' &&
    steps.length > 0 &&
    !steps.some((step) => registry.get(step.stepId, flow)?.authenticates === true)
  ) {
    problems.push({
      path: 'steps',
      message: 'a login funnel needs a step that proves who signs in (password, otp-code, totp, qr, oauth)',
    });
  }
  return problems;
}

export function unknownMethods(
  methods: string[],
  registry: AuthMethodRegistry,
): { path: string; message: string }[] {
  return methods.flatMap((method, index) =>
    registry.get(method)
      ? []
      : [{ path: `methods.${index}`, message: `no sign-in method ${method} is registered` }],
  );
}

/**
 * The sign-in funnels (table auth_flow_steps, read at every flow start) and the allowed methods (a
 * platform setting) for administrators: read, and replace after a recent authentication. A change
 * applies to the flows started after it.
 */
export function authFlowRoutes(deps: {
  db: Database;
  clock: Clock;
  steps: StepRegistry;
  authMethods: AuthMethodRegistry;
}): AdminRoutes {
  const { db, clock } = deps;
  const tags = ['Auth flow'];
  const permission = requirePermission(manageAuthFlowPermission);
  const planner = new UserFunnelPlanner(deps.authMethods);
  return (api) => {
    api.add(
      {
        method: 'get',
        path: '/auth-flow/funnels/:flow',
        summary: 'The steps of the login or registration funnel, in order',
        tags,
        security: 'bearer',
        params: flowParams,
        responses: { 200: { description: 'The funnel', schema: funnelSchema }, ...errors },
      },
      permission,
      async (ctx, _body, { params }) => {
        ctx.body = { flow: params.flow, steps: await loadFunnel(db, params.flow) };
      },
    );

    api.add(
      {
        method: 'put',
        path: '/auth-flow/funnels/:flow',
        summary:
          'Replace a funnel (steps registered for the flow, each once); applies to flows started after',
        tags,
        security: 'bearer',
        reauthentication: true,
        params: flowParams,
        body: z.object({ steps: z.array(funnelStepSchema).max(20) }),
        responses: { 200: { description: 'The funnel now', schema: funnelSchema }, ...errors },
      },
      permission,
      async (ctx, body, { params }) => {
        const problems = funnelProblems(body.steps, params.flow, deps.steps);
        if (problems.length > 0)
          throw new ApiError(400, 'invalid_funnel', 'The funnel is not valid.', problems);
        await db.transaction(async (trx) => {
          const before = await loadFunnel(trx, params.flow);
          const replace = () => replaceFunnel(trx, params.flow, body.steps, clock.now());
          // Only the login funnel decides what existing users are asked.
          if (params.flow === 'login') {
            await requireWeakensNobodyAbove(trx, principalOf(ctx), planner, replace);
          } else {
            await replace();
          }
          await auditAdminChange(
            trx,
            ctx,
            adminAuditEventTypes.funnelReplaced,
            {
              flow: params.flow,
              before: before.map((step) => step.stepId),
              after: body.steps.map((step) => step.stepId),
            },
            clock.now(),
          );
        });
        ctx.body = { flow: params.flow, steps: await loadFunnel(db, params.flow) };
      },
    );

    api.add(
      {
        method: 'get',
        path: '/auth-flow/allowed-methods',
        summary: 'The sign-in methods users may enable in their security settings',
        tags,
        security: 'bearer',
        responses: { 200: { description: 'The allowed methods', schema: allowedMethodsSchema }, ...errors },
      },
      permission,
      async (ctx) => {
        ctx.body = { methods: await readSetting(db, allowedMethodsSetting) };
      },
    );

    api.add(
      {
        method: 'put',
        path: '/auth-flow/allowed-methods',
        summary: 'Replace the allowed methods (registered auth_method plugin slugs)',
        tags,
        security: 'bearer',
        reauthentication: true,
        body: z.object({ methods: z.array(z.string().min(1).max(100)).max(50) }),
        responses: {
          200: { description: 'The allowed methods now', schema: allowedMethodsSchema },
          ...errors,
        },
      },
      permission,
      async (ctx, body) => {
        const problems = unknownMethods(body.methods, deps.authMethods);
        if (problems.length > 0) {
          throw new ApiError(400, 'invalid_request', 'An allowed method is not registered.', problems);
        }
        const methods = [...new Set(body.methods)];
        await db.transaction(async (trx) => {
          const before = await readSetting(trx, allowedMethodsSetting);
          await requireWeakensNobodyAbove(trx, principalOf(ctx), planner, () =>
            writeSetting(trx, allowedMethodsSetting, methods, clock.now()),
          );
          await auditAdminChange(
            trx,
            ctx,
            adminAuditEventTypes.allowedMethodsChanged,
            { before, after: methods },
            clock.now(),
          );
        });
        ctx.body = { methods };
      },
    );
  };
}
