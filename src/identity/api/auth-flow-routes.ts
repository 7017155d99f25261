import { z } from 'zod';
import type { Clock } from '../../clock.js';
import { sha256 } from '../../crypto/digest.js';
import type { Database } from '../../db/database.js';
import { RateLimitExceeded, type RateLimitRule, type RateLimits } from '../../http/rate-limit.js';
import { requestInfo } from '../../http/request-info.js';
import { readSetting } from '../../platform/settings/platform-settings.js';
import { allowedMethodsSetting } from '../auth-flow/allowed-methods.js';
import type { AuthFlowEngine, FlowInProgress } from '../auth-flow/flow-engine.js';
import { flowStartRateLimit, flowStepRateLimit } from '../auth-flow/flow-rate-limits.js';
import { flowKinds } from '../auth-flow/flow-session.js';
import type { SecurityNotifications } from '../notifications/security-notifications.js';
import { loadFunnel } from '../auth-flow/funnel-steps.js';
import type { RequestInfo } from '../auth-flow/step.js';
import { completeSignIn } from '../sessions/complete-sign-in.js';
import { readDeviceCookie, setDeviceCookie } from '../sessions/device-bindings.js';
import type { MainAuthSigning } from '../sessions/main-auth-tokens.js';
import { setRefreshCookie } from '../sessions/refresh-cookie.js';
import type { IdentityRoutes } from './identity-api.js';

export interface AuthFlowRouteDependencies {
  db: Database;
  clock: Clock;
  flows: AuthFlowEngine;
  rateLimits: RateLimits;
  signing: MainAuthSigning;
  notifications: SecurityNotifications;
  apiPrefix: string;
}

const flowKind = z.enum(flowKinds);
const stepId = z.string().min(1).max(100);
const stepInput = z.record(z.string(), z.unknown());

const startRequest = z.object({ flow: flowKind }).meta({ id: 'FlowStartRequest' });

const stepRequest = z
  .union([
    z.object({
      sessionId: z.string().min(1).max(200),
      step: stepId.describe('The step being submitted (the flow’s nextStep)'),
      input: stepInput.default({}).describe('The step’s fields'),
    }),
    z.object({
      sessionId: z.string().min(1).max(200),
      steps: z.record(stepId, stepInput).describe('A group screen: the fields of each of its steps'),
    }),
  ])
  .meta({ id: 'FlowStepRequest' });

const stepScreen = z
  .object({
    stepId: z.string(),
    title: z.string(),
    description: z.string().optional(),
    fields: z.array(
      z.object({
        name: z.string(),
        type: z.enum([
          'text',
          'email',
          'tel',
          'password',
          'one-time-code',
          'checkbox',
          'number',
          'date',
          'select',
        ]),
        label: z.string(),
        required: z.boolean().optional(),
        options: z.array(z.object({ value: z.string(), label: z.string() })).optional(),
        autocomplete: z.string().optional(),
      }),
    ),
    data: z.record(z.string(), z.unknown()).optional(),
  })
  .meta({ id: 'FlowStepScreen' });

const flowInProgress = z
  .object({
    status: z.literal('in_progress'),
    flow: flowKind,
    sessionId: z.string().describe('Single-use: send it with the next step; every accepted step replaces it'),
    expiresAt: z.iso.datetime(),
    completedSteps: z.array(z.string()),
    nextStep: z.string(),
    screen: z.array(stepScreen).describe('The steps shown together on the next screen'),
  })
  .meta({ id: 'FlowInProgress' });

const flowCompleted = z
  .object({
    status: z.literal('completed'),
    flow: flowKind,
    userId: z.uuid(),
    sessionId: z.uuid().describe('The main-auth session this login started'),
    accessToken: z.string(),
    tokenType: z.literal('Bearer'),
    expiresIn: z.number().int(),
  })
  .meta({ id: 'FlowCompleted', description: 'The refresh token is in the service_id_refresh_token cookie' });

const funnelStep = z.object({
  stepId: z.string(),
  mandatory: z.boolean(),
  order: z.number().int(),
  group: z.string().optional(),
  settings: z.record(z.string(), z.unknown()).optional(),
});
const flowConfig = z
  .object({
    login: z.array(funnelStep),
    registration: z.array(funnelStep),
    allowedMethods: z.array(z.string()),
  })
  .meta({ id: 'AuthFlowConfig' });

const errors = {
  400: { description: 'Malformed request or a step input that is not valid' },
  429: { description: 'Too many requests (Retry-After)' },
};

async function consume(rateLimits: RateLimits, rule: RateLimitRule, key: string) {
  try {
    await rateLimits.consume(rule, key);
  } catch (error) {
    throw error instanceof RateLimitExceeded ? error.toApiError() : error;
  }
}

/** /auth/flow/start, /auth/flow/step, /auth/flow/config: the auth-flow engine over JSON. */
export function authFlowRoutes(deps: AuthFlowRouteDependencies): IdentityRoutes {
  const { db, clock, flows, rateLimits, signing, apiPrefix } = deps;

  const present = async (
    flow: FlowInProgress,
    request: RequestInfo,
  ): Promise<z.infer<typeof flowInProgress>> => ({
    status: 'in_progress',
    flow: flow.session.flow,
    sessionId: flow.session.id,
    expiresAt: flow.session.expiresAt.toISOString(),
    completedSteps: flow.session.completedSteps,
    nextStep: flow.nextStep,
    screen: await flows.describe(flow, request),
  });

  return (api) => {
    api.add(
      {
        method: 'post',
        path: '/auth/flow/start',
        summary: 'Start a login or registration flow',
        tags: ['Auth flow'],
        security: 'none',
        body: startRequest,
        responses: {
          200: { description: 'The flow and its first screen', schema: flowInProgress },
          ...errors,
        },
      },
      async (ctx, body) => {
        const request = requestInfo(ctx);
        await consume(rateLimits, flowStartRateLimit, request.addressBlock);
        const flow = await flows.start(body.flow, { ip: request.ip, userAgent: request.userAgent }, request);
        ctx.set('Cache-Control', 'no-store');
        // Screens may show what the device knows (account-selection: the accounts saved on it).
        ctx.body = await present(flow, { ...request, deviceCookie: readDeviceCookie(ctx) });
      },
    );

    api.add(
      {
        method: 'post',
        path: '/auth/flow/step',
        summary: 'Submit the next step (or group screen) of a flow',
        tags: ['Auth flow'],
        security: 'none',
        body: stepRequest,
        responses: {
          200: {
            description: 'The next screen, or the completed login with the access token',
            schema: z.union([flowInProgress, flowCompleted]),
          },
          ...errors,
          401: {
            description:
              'Credentials or code not right, or account_mismatch: a later step named another account than the one a step proved',
          },
          409: { description: 'Not the step the flow expects now (details.expectedSteps)' },
          410: { description: 'Flow session unknown, expired or already used: start again' },
        },
      },
      async (ctx, body) => {
        const request = requestInfo(ctx);
        await consume(rateLimits, flowStepRateLimit, `${request.addressBlock}:${sha256(body.sessionId)}`);
        const inputs = 'steps' in body ? body.steps : { [body.step]: body.input };
        const deviceCookie = readDeviceCookie(ctx);
        // The steps see the device cookie (a known device is its own lockout source); flows never store it.
        const fromDevice = { ...request, deviceCookie };
        const outcome = await flows.submitScreen(body.sessionId, inputs, fromDevice, {
          onComplete: (trx, completed) =>
            completeSignIn(
              trx,
              signing,
              {
                flow: completed.flow,
                userId: completed.userId,
                authMethods: completed.authMethods,
                authenticatedAt: completed.authenticatedAt,
                startedBySessionId: completed.startedBySessionId,
                request,
                deviceCookie,
              },
              clock.now(),
            ),
        });
        ctx.set('Cache-Control', 'no-store');
        if (outcome.status === 'in_progress') {
          ctx.body = await present(outcome, fromDevice);
          return;
        }
        const tokens = outcome.completion!;
        setRefreshCookie(
          ctx,
          apiPrefix,
          tokens.refreshToken.value,
          tokens.refreshToken.expiresAt,
          clock.now(),
        );
        if (tokens.newDeviceSecret) setDeviceCookie(ctx, tokens.newDeviceSecret);
        if (tokens.newDeviceFor) {
          deps.notifications.notify(tokens.newDeviceFor, {
            kind: 'new_device_sign_in',
            device: tokens.session.browserName,
            ip: request.ip,
            at: tokens.session.createdAt,
          });
        }
        ctx.body = {
          status: 'completed',
          flow: outcome.flow,
          userId: outcome.userId,
          sessionId: tokens.session.id,
          accessToken: tokens.accessToken,
          tokenType: 'Bearer',
          expiresIn: tokens.expiresIn,
        } satisfies z.infer<typeof flowCompleted>;
      },
    );

    api.add(
      {
        method: 'get',
        path: '/auth/flow/config',
        summary: 'The public funnel configuration',
        tags: ['Auth flow'],
        security: 'none',
        responses: {
          200: { description: 'Login and registration funnels, allowed methods', schema: flowConfig },
        },
      },
      async (ctx) => {
        const [login, registration, allowedMethods] = await Promise.all([
          loadFunnel(db, 'login'),
          loadFunnel(db, 'registration'),
          readSetting(db, allowedMethodsSetting),
        ]);
        ctx.body = { login, registration, allowedMethods } satisfies z.infer<typeof flowConfig>;
      },
    );
  };
}
