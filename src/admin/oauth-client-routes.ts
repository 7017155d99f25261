import type { Context } from 'koa';
import { z } from 'zod';
import type { Clock } from '../clock.js';
import type { Database } from '../db/database.js';
import { ApiError, notFound } from '../http/api-error.js';
import { principalOf, requirePermission } from '../http/bearer-auth.js';
import {
  requireMayChangeClient,
  requireMayGrantScopes,
  requireMayEnableClient,
  requireMayRotateSecret,
} from '../oidc/client-authority.js';
import {
  announceClientChange,
  clientTypes,
  clientView,
  createClient,
  deleteClient,
  disableClient,
  enableClient,
  findClient,
  findClientForUpdate,
  grantTypes,
  listClientPage,
  newClientSchema,
  rotateClientSecret,
  updateClient,
  type OAuthClient,
} from '../oidc/models/oauth-client.js';
import type { Principal } from '../tokens/principal.js';
import { adminAuditEventTypes, auditAdminChange } from './admin-audit.js';
import type { AdminRoutes } from './admin-api.js';

/** Spec, OAuth client rule 5: clients are managed with this permission (and re-authentication). */
export const manageClientsPermission = 'identity.oauth_clients.manage';

const clientSchema = z
  .object({
    client_id: z.string(),
    name: z.string(),
    type: z.enum(clientTypes),
    redirect_uris: z.array(z.string()),
    post_logout_redirect_uris: z.array(z.string()),
    allowed_scopes: z.array(z.string()),
    grant_types: z.array(z.enum(grantTypes)),
    is_active: z.boolean(),
    first_party: z.boolean(),
    owner_id: z.string().nullable(),
    created_at: z.string().describe('ISO 8601'),
  })
  .meta({ id: 'OAuthClient' });

const clientWithSecretSchema = clientSchema
  .extend({ client_secret: z.string().optional().describe('Shown once, now; only its hash is stored') })
  .meta({ id: 'OAuthClientWithSecret' });

const clientIdParams = z.object({ clientId: z.string().min(1).max(100).describe('The client_id') });

const listQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(20).describe('Clients per page'),
  offset: z.coerce.number().int().min(0).max(1_000_000).default(0).describe('Clients to skip'),
  status: z.enum(['active', 'disabled']).optional(),
  search: z.string().trim().min(1).max(100).optional().describe('Part of the name or client_id'),
});

const createBody = z.object({
  name: z.string(),
  type: z.enum(clientTypes),
  redirect_uris: z.array(z.string()).optional(),
  post_logout_redirect_uris: z.array(z.string()).optional(),
  scopes: z.array(z.string()),
  grant_types: z.array(z.enum(grantTypes)).optional(),
});

const updateBody = z
  .object({
    name: z.string(),
    redirect_uris: z.array(z.string()),
    post_logout_redirect_uris: z.array(z.string()),
    scopes: z.array(z.string()),
    grant_types: z.array(z.enum(grantTypes)),
  })
  .partial()
  .strict()
  .refine((body) => Object.keys(body).length > 0, { message: 'nothing to change' });

/** The request's field names (RFC 7591) of the client schema's fields, for error details. */
const fieldNames: Record<string, string> = {
  redirectUris: 'redirect_uris',
  postLogoutRedirectUris: 'post_logout_redirect_uris',
  grantTypes: 'grant_types',
};

/** A client the rules refuse: 400 invalid_client_metadata (or invalid_redirect_uri), fields named as sent. */
function invalidClient(error: z.ZodError): ApiError {
  const details = error.issues.map((issue) => ({
    path: [fieldNames[String(issue.path[0])] ?? issue.path[0], ...issue.path.slice(1)].join('.'),
    message: issue.message,
  }));
  return details.some((detail) => /^(post_logout_)?redirect_uris\.\d+$/.test(detail.path))
    ? new ApiError(400, 'invalid_redirect_uri', 'A redirect URI is not acceptable.', details)
    : new ApiError(400, 'invalid_client_metadata', 'The client is not valid.', details);
}

const noClient = (clientId: string) => notFound(`There is no client with client_id ${clientId}.`);

const errors = {
  400: { description: 'Bad input (the JSON error body names the fields)' },
  401: { description: 'No valid access token, or (sensitive changes) no recent authentication' },
  403: {
    description:
      'The token does not carry identity.oauth_clients.manage, or the change gives a service scope the ' +
      'user does not hold, or changes (or enables) a first-party client without *, or enables a service ' +
      'client whose permissions the user does not hold',
  },
};

/**
 * OAuth clients for administrators (/api/v2/admin/oauth-clients): list, get, create, update,
 * disable, enable, delete, rotate the secret. Every change is audited with the administrator's id in
 * the change's transaction, and reaches the engine's client cache at once on this node (within seconds
 * on the others): a disabled or deleted client gets no tokens and its access tokens are refused
 * (introspection, userinfo, our APIs); a rotated secret replaces the old one at once.
 */
export function oauthClientRoutes(deps: { db: Database; clock: Clock }): AdminRoutes {
  const { db, clock } = deps;
  const tags = ['OAuth clients'];
  const permission = requirePermission(manageClientsPermission);

  /** Runs a change and its audit in one transaction; the client cache hears of it after the commit. */
  async function change<T>(ctx: Context, clientId: string, work: (trx: Database) => Promise<T>): Promise<T> {
    const result = await db.transaction((trx) => work(trx as unknown as Database));
    announceClientChange(clientId);
    ctx.set('Cache-Control', 'no-store');
    return result;
  }

  return (api) => {
    api.add(
      {
        method: 'get',
        path: '/oauth-clients',
        summary: 'List OAuth clients, newest first (never their secrets)',
        tags,
        security: 'bearer',
        query: listQuery,
        responses: {
          200: {
            description: 'A page of clients and how many match',
            schema: z.object({
              clients: z.array(clientSchema),
              total: z.number().int(),
              limit: z.number().int(),
              offset: z.number().int(),
            }),
          },
          ...errors,
        },
      },
      permission,
      async (ctx, _body, { query }) => {
        const page = await listClientPage(db, query);
        ctx.body = { clients: page.clients.map(clientView), total: page.total, ...query };
      },
    );

    api.add(
      {
        method: 'get',
        path: '/oauth-clients/:clientId',
        summary: 'One OAuth client',
        tags,
        security: 'bearer',
        params: clientIdParams,
        responses: {
          200: { description: 'The client', schema: clientSchema },
          ...errors,
          404: { description: 'No such client' },
        },
      },
      permission,
      async (ctx, _body, { params }) => {
        const client = await findClient(db, params.clientId);
        if (!client) throw noClient(params.clientId);
        ctx.body = clientView(client);
      },
    );

    api.add(
      {
        method: 'post',
        path: '/oauth-clients',
        summary: 'Register an OAuth client (a confidential client’s secret is shown once, here)',
        tags,
        security: 'bearer',
        reauthentication: true,
        body: createBody,
        responses: { 201: { description: 'The new client', schema: clientWithSecretSchema }, ...errors },
      },
      permission,
      async (ctx, body) => {
        const principal = principalOf(ctx);
        const parsed = newClientSchema.safeParse({
          name: body.name,
          type: body.type,
          redirectUris: body.redirect_uris,
          postLogoutRedirectUris: body.post_logout_redirect_uris,
          scopes: body.scopes,
          grantTypes: body.grant_types,
          ownerId: principal.kind === 'user' ? principal.userId : null,
        });
        if (!parsed.success) throw invalidClient(parsed.error);
        requireMayGrantScopes(principal, parsed.data.scopes);
        const { client, clientSecret } = await db.transaction(async (trx) => {
          const created = await createClient(trx, parsed.data);
          await auditAdminChange(
            trx,
            ctx,
            adminAuditEventTypes.clientCreated,
            { clientId: created.client.clientId, name: created.client.name },
            clock.now(),
          );
          return created;
        });
        ctx.status = 201;
        ctx.set('Cache-Control', 'no-store');
        ctx.body = { ...clientView(client), ...(clientSecret ? { client_secret: clientSecret } : {}) };
      },
    );

    api.add(
      {
        method: 'patch',
        path: '/oauth-clients/:clientId',
        summary: 'Change a client’s name, redirect URIs, scopes or grant types (checked as a new client is)',
        tags,
        security: 'bearer',
        reauthentication: true,
        params: clientIdParams,
        body: updateBody,
        responses: {
          200: { description: 'The changed client', schema: clientSchema },
          ...errors,
          404: { description: 'No such client' },
        },
      },
      permission,
      async (ctx, body, { params }) => {
        const changes = {
          ...(body.name !== undefined ? { name: body.name } : {}),
          ...(body.redirect_uris ? { redirectUris: body.redirect_uris } : {}),
          ...(body.post_logout_redirect_uris
            ? { postLogoutRedirectUris: body.post_logout_redirect_uris }
            : {}),
          ...(body.scopes ? { scopes: body.scopes } : {}),
          ...(body.grant_types ? { grantTypes: body.grant_types } : {}),
        };
        const principal = principalOf(ctx);
        const client = await change(ctx, params.clientId, async (trx) => {
          // Judged on the locked row: the scopes it keeps may stay, the ones it gains must be held.
          const current = await findClientForUpdate(trx, params.clientId);
          if (!current) throw noClient(params.clientId);
          requireMayChangeClient(principal, current);
          requireMayGrantScopes(principal, changes.scopes ?? [], current.allowedScopes);
          let updated;
          try {
            updated = await updateClient(trx, params.clientId, changes, clock.now());
          } catch (error) {
            if (error instanceof z.ZodError) throw invalidClient(error);
            throw error;
          }
          if (!updated) throw noClient(params.clientId);
          await auditAdminChange(
            trx,
            ctx,
            adminAuditEventTypes.clientUpdated,
            { clientId: params.clientId, fields: Object.keys(body) },
            clock.now(),
          );
          return updated;
        });
        ctx.body = clientView(client);
      },
    );

    const statusChange = (
      path: string,
      summary: string,
      apply: (trx: Database, clientId: string, now: Date) => Promise<boolean>,
      auditType: string,
      reauthentication: boolean,
      /** Throws (403) when the principal may not make this change to this client. */
      mayApply: (principal: Principal, client: OAuthClient) => void = () => {},
    ) =>
      api.add(
        {
          method: 'post',
          path: `/oauth-clients/:clientId/${path}`,
          summary,
          tags,
          security: 'bearer',
          ...(reauthentication ? { reauthentication: true as const } : {}),
          params: clientIdParams,
          responses: {
            200: { description: 'The client now', schema: clientSchema },
            ...errors,
            404: { description: 'No such client' },
          },
        },
        permission,
        async (ctx, _body, { params }) => {
          const principal = principalOf(ctx);
          const client = await change(ctx, params.clientId, async (trx) => {
            const current = await findClientForUpdate(trx, params.clientId);
            if (!current) throw noClient(params.clientId);
            mayApply(principal, current);
            if (!(await apply(trx, params.clientId, clock.now()))) throw noClient(params.clientId);
            await auditAdminChange(trx, ctx, auditType, { clientId: params.clientId }, clock.now());
            return (await findClient(trx, params.clientId))!;
          });
          ctx.body = clientView(client);
        },
      );
    statusChange(
      'disable',
      'Disable a client: it can no longer authorize or get tokens, and its access tokens are refused',
      disableClient,
      adminAuditEventTypes.clientDisabled,
      true,
    );
    statusChange(
      'enable',
      'Enable a disabled client again',
      enableClient,
      adminAuditEventTypes.clientEnabled,
      true,
      requireMayEnableClient,
    );

    api.add(
      {
        method: 'post',
        path: '/oauth-clients/:clientId/rotate-secret',
        summary: 'Give a confidential client a new secret, shown once; the old one stops working at once',
        tags,
        security: 'bearer',
        reauthentication: true,
        params: clientIdParams,
        responses: {
          200: { description: 'The client with its new secret', schema: clientWithSecretSchema },
          ...errors,
          404: { description: 'No such client' },
        },
      },
      permission,
      async (ctx, _body, { params }) => {
        const principal = principalOf(ctx);
        const rotated = await change(ctx, params.clientId, async (trx) => {
          const current = await findClientForUpdate(trx, params.clientId);
          if (!current) throw noClient(params.clientId);
          requireMayRotateSecret(principal, current);
          const result = await rotateClientSecret(trx, params.clientId, clock.now());
          if (!result) throw noClient(params.clientId);
          await auditAdminChange(
            trx,
            ctx,
            adminAuditEventTypes.clientSecretRotated,
            { clientId: params.clientId },
            clock.now(),
          );
          return result;
        });
        ctx.body = { ...clientView(rotated.client), client_secret: rotated.clientSecret };
      },
    );

    api.add(
      {
        method: 'delete',
        path: '/oauth-clients/:clientId',
        summary: 'Delete a client with its consents and refresh tokens; its access tokens are refused',
        tags,
        security: 'bearer',
        reauthentication: true,
        params: clientIdParams,
        responses: { 204: { description: 'Deleted' }, ...errors, 404: { description: 'No such client' } },
      },
      permission,
      async (ctx, _body, { params }) => {
        await change(ctx, params.clientId, async (trx) => {
          const client = await findClient(trx, params.clientId);
          if (!client || !(await deleteClient(trx, params.clientId))) throw noClient(params.clientId);
          await auditAdminChange(
            trx,
            ctx,
            adminAuditEventTypes.clientDeleted,
            { clientId: params.clientId, name: client.name },
            clock.now(),
          );
        });
        ctx.status = 204;
      },
    );
  };
}
