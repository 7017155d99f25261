import { z } from 'zod';
import type { Clock } from '../../clock.js';
import { requestInfo } from '../../http/request-info.js';
import { authMethodTypes } from '../auth-methods/auth-method-type.js';
import type { AuthMethodManager } from '../auth-methods/manage-auth-methods.js';
import { activeSessionOf } from '../sessions/require-active-session.js';
import type { IdentityRoutes } from './identity-api.js';

export interface AuthMethodRouteDependencies {
  clock: Clock;
  manager: AuthMethodManager;
}

const methodType = z.enum(authMethodTypes);

const methodView = z
  .object({
    type: methodType,
    title: z.string(),
    configured: z.boolean(),
    enabled: z.boolean(),
    pendingVerification: z.boolean(),
    mandatory: z.boolean().describe('Required by the login settings: it can’t be turned off'),
    lastUsedAt: z.iso.datetime().nullable(),
  })
  .meta({ id: 'AuthMethod' });

const methodList = z
  .object({
    methods: z.array(methodView),
    available: z.array(methodType).describe('Methods the user may set up now'),
  })
  .meta({ id: 'AuthMethodList' });

const setupResponse = z
  .object({
    type: methodType,
    status: z.enum(['pending_verification', 'enabled']),
    secret: z.string().optional().describe('TOTP: the secret to type into an authenticator app'),
    otpauthUrl: z.string().optional().describe('TOTP: the otpauth:// URL to show as a QR code'),
  })
  .loose()
  .meta({ id: 'AuthMethodSetup' });

const verifyRequest = z
  .object({ code: z.string().trim().min(1).max(16) })
  .meta({ id: 'AuthMethodVerifyRequest' });

/** /security/auth-methods: list, set up, confirm and remove the user's sign-in methods. */
export function authMethodRoutes(deps: AuthMethodRouteDependencies): IdentityRoutes {
  const { clock, manager } = deps;
  const common = {
    400: { description: 'Malformed request' },
    401: {
      description:
        'No valid main-auth access token, its session has ended, or (changes) reauthentication_required',
    },
    404: { description: 'No such sign-in method' },
  };
  const typeOf = (params: Record<string, string>) => methodType.parse(params.type);

  return (api) => {
    api.add(
      {
        method: 'get',
        path: '/security/auth-methods',
        summary: 'The sign-in methods of the signed-in user',
        tags: ['Security'],
        security: 'bearer',
        responses: {
          200: { description: 'Linked methods and those that can be added', schema: methodList },
          ...common,
        },
      },
      async (ctx) => {
        const { methods, available } = await manager.list(activeSessionOf(ctx).userId);
        ctx.set('Cache-Control', 'no-store');
        ctx.body = {
          methods: methods.map((method) => ({
            ...method,
            lastUsedAt: method.lastUsedAt?.toISOString() ?? null,
          })),
          available,
        } satisfies z.infer<typeof methodList>;
      },
    );

    api.add(
      {
        method: 'post',
        path: '/security/auth-methods/:type/setup',
        summary: 'Begin setting up a method (TOTP: answers the secret), or turn a turned-off one back on',
        tags: ['Security'],
        security: 'bearer',
        reauthentication: true,
        responses: {
          200: { description: 'Set up, or waiting for its confirmation', schema: setupResponse },
          ...common,
          403: { description: 'The method is not offered' },
          409: { description: 'Already set up, or its prerequisite is missing' },
        },
      },
      async (ctx) => {
        const userId = activeSessionOf(ctx).userId;
        const type = typeOf(ctx.params);
        const now = clock.now();
        const result = await manager.setUp(userId, type, requestInfo(ctx), now);
        ctx.set('Cache-Control', 'no-store');
        ctx.body = result;
      },
    );

    api.add(
      {
        method: 'post',
        path: '/security/auth-methods/:type/verify',
        summary: 'Confirm a setup (TOTP: a code from the app)',
        tags: ['Security'],
        security: 'bearer',
        reauthentication: true,
        body: verifyRequest,
        responses: {
          200: {
            description: 'The method is on',
            schema: z.object({ type: methodType, status: z.literal('enabled') }),
          },
          ...common,
          409: { description: 'No setup in progress' },
        },
      },
      async (ctx, body) => {
        const userId = activeSessionOf(ctx).userId;
        const type = typeOf(ctx.params);
        const now = clock.now();
        await manager.confirm(userId, type, body, requestInfo(ctx), now);
        ctx.body = { type, status: 'enabled' };
      },
    );

    api.add(
      {
        method: 'delete',
        path: '/security/auth-methods/:type',
        summary: 'Turn a method off or unlink it; signs out the other sessions',
        tags: ['Security'],
        security: 'bearer',
        reauthentication: true,
        responses: {
          200: { description: 'Removed', schema: z.object({ type: methodType, removed: z.literal(true) }) },
          ...common,
          409: { description: 'Mandatory, or the last usable sign-in method (account rule 5)' },
        },
      },
      async (ctx) => {
        const { userId, id: sessionId } = activeSessionOf(ctx);
        const type = typeOf(ctx.params);
        const now = clock.now();
        await manager.remove(userId, type, requestInfo(ctx), now, sessionId);
        ctx.body = { type, removed: true };
      },
    );
  };
}
