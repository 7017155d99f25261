import { z } from 'zod';
import type { Clock } from '../../clock.js';
import { requestInfo } from '../../http/request-info.js';
import { returnToSchema, type Federation } from '../federation/federation-routes.js';
import type { LinkedProviders } from '../federation/linked-providers.js';
import { activeSessionOf } from '../sessions/require-active-session.js';
import type { IdentityRoutes } from './identity-api.js';

export interface LinkedProviderRouteDependencies {
  clock: Clock;
  linkedProviders: LinkedProviders;
  /** Starts a provider sign-in that links the provider account to the signed-in user. */
  federation: Pick<Federation, 'beginLink'>;
}

const linkRequest = z
  .object({
    provider: z.string().min(1).max(100).describe('The id of a configured provider'),
    returnTo: returnToSchema.unwrap().describe('A path of this service the browser returns to once linked'),
  })
  .meta({ id: 'LinkProviderRequest' });

const linkedProvider = z
  .object({
    id: z.uuid().describe('The link; DELETE /security/linked-providers/{id} removes it'),
    provider: z.string(),
    providerName: z.string(),
    linkedAt: z.iso.datetime(),
    lastUsedAt: z.iso.datetime().nullable(),
  })
  .meta({ id: 'LinkedProvider' });

const linkedProviderList = z
  .object({
    linked: z.array(linkedProvider),
    available: z.array(z.object({ id: z.string(), name: z.string() })).describe('Providers configured here'),
  })
  .meta({ id: 'LinkedProviderList' });

/** /security/linked-providers: the third-party providers linked to the account; unlinking one. */
export function linkedProviderRoutes(deps: LinkedProviderRouteDependencies): IdentityRoutes {
  const { clock, linkedProviders } = deps;
  return (api) => {
    api.add(
      {
        method: 'get',
        path: '/security/linked-providers',
        summary: 'The third-party identity providers linked to the signed-in user',
        tags: ['Security'],
        security: 'bearer',
        responses: {
          200: { description: 'Linked providers and those configured', schema: linkedProviderList },
          401: { description: 'No valid main-auth access token, or its session has ended' },
        },
      },
      async (ctx) => {
        const { linked, available } = await linkedProviders.list(activeSessionOf(ctx).userId);
        ctx.set('Cache-Control', 'no-store');
        ctx.body = {
          linked: linked.map((link) => ({
            ...link,
            linkedAt: link.linkedAt.toISOString(),
            lastUsedAt: link.lastUsedAt?.toISOString() ?? null,
          })),
          available,
        } satisfies z.infer<typeof linkedProviderList>;
      },
    );

    api.add(
      {
        method: 'post',
        path: '/security/linked-providers',
        summary: 'Link a third-party identity provider: answers where to send the browser',
        tags: ['Security'],
        security: 'bearer',
        reauthentication: true,
        body: linkRequest,
        responses: {
          200: {
            description:
              'Where to send the browser (top-level). The response set the federation_attempt cookie (this ' +
              'browser only); after the provider the browser returns to returnTo with the provider linked, or ' +
              'to a page saying why not (subject_linked_elsewhere: linked to another account)',
            schema: z.object({ authorizationUrl: z.url() }).meta({ id: 'LinkProviderStart' }),
          },
          400: { description: 'Bad input (returnTo must be a path of this service)' },
          401: {
            description:
              'No valid main-auth access token, its session has ended, or reauthentication_required',
          },
          404: { description: 'No such provider configured (unknown_provider)' },
          502: { description: 'The provider cannot be reached' },
        },
      },
      async (ctx, body) => {
        const url = await deps.federation.beginLink(ctx, body.provider, activeSessionOf(ctx), body.returnTo);
        ctx.set('Cache-Control', 'no-store');
        ctx.body = { authorizationUrl: url.href };
      },
    );

    api.add(
      {
        method: 'delete',
        path: '/security/linked-providers/:id',
        summary: 'Unlink a third-party identity provider; signs out the other sessions',
        tags: ['Security'],
        security: 'bearer',
        reauthentication: true,
        responses: {
          200: {
            description: 'Unlinked',
            schema: z.object({ provider: z.string(), removed: z.literal(true) }),
          },
          401: {
            description:
              'No valid main-auth access token, its session has ended, or reauthentication_required',
          },
          404: { description: 'No such linked provider' },
          409: { description: 'The last active sign-in method (account rule 5)' },
        },
      },
      async (ctx) => {
        const { userId, id: sessionId } = activeSessionOf(ctx);
        const { provider } = await linkedProviders.unlink(
          userId,
          String(ctx.params.id),
          requestInfo(ctx),
          clock.now(),
          sessionId,
        );
        ctx.body = { provider, removed: true };
      },
    );
  };
}
