import { z } from 'zod';
import { adminAuditEventTypes, auditCliChange } from '../../admin/admin-audit.js';
import {
  announceClientChange,
  createClient,
  clientView,
  disableClient,
  listClients,
  newClientSchema,
  type NewClient,
} from '../../oidc/models/oauth-client.js';
import { splitScope } from '../../oidc/scopes.js';
import { UsageError, type CliCommand } from '../command.js';
import { describeZodError } from '../describe-zod-error.js';

const asList = (value: unknown) => (Array.isArray(value) ? value : value === undefined ? undefined : [value]);

// Flags as typed (--redirect-uri, --scope...) onto the client schema's fields.
const flagNames: Record<string, string> = {
  redirectUris: 'redirect-uri',
  postLogoutRedirectUris: 'post-logout-redirect-uri',
  scopes: 'scope',
  grantTypes: 'grant-type',
  firstParty: 'first-party',
};

export const clientsCreateCommand: CliCommand = {
  name: 'clients:create',
  usage:
    'clients:create --name N --type public|confidential [--redirect-uri U]... [--post-logout-redirect-uri U]... --scope S... [--grant-type G]... [--first-party]',
  summary:
    'Register an OAuth client (--first-party: one of our own applications); prints its client_id (and, once, the secret of a confidential client)',
  options: {
    name: { type: 'string' },
    type: { type: 'string' },
    'redirect-uri': { type: 'string', multiple: true },
    'post-logout-redirect-uri': { type: 'string', multiple: true },
    scope: { type: 'string', multiple: true },
    'grant-type': { type: 'string', multiple: true },
    'first-party': { type: 'boolean' },
  },
  needsDatabase: true,
  parse(values) {
    const input = {
      name: values.name,
      type: values.type,
      redirectUris: asList(values['redirect-uri']),
      postLogoutRedirectUris: asList(values['post-logout-redirect-uri']),
      // `--scope "openid email"` and `--scope openid --scope email` both work.
      scopes: asList(values.scope)?.flatMap((scope) => splitScope(String(scope))),
      grantTypes: asList(values['grant-type']),
      firstParty: values['first-party'] === true,
    };
    const parsed = newClientSchema.safeParse(input);
    if (!parsed.success) {
      throw new UsageError(
        describeZodError(
          new z.ZodError(
            parsed.error.issues.map((issue) => ({
              ...issue,
              path: [flagNames[String(issue.path[0])] ?? issue.path[0]!, ...issue.path.slice(1)],
            })),
          ),
        ),
      );
    }
    return parsed.data;
  },
  async run(input: NewClient, context) {
    const { client, clientSecret } = await createClient(context!.db, input);
    return {
      ...clientView(client),
      ...(clientSecret
        ? { client_secret: clientSecret, note: 'the client_secret is shown only now; store it' }
        : {}),
    };
  },
};

const listFilter = z.object({
  status: z.enum(['active', 'disabled']).optional(),
  search: z.string().trim().min(1).max(100).optional(),
});

export const clientsListCommand: CliCommand = {
  name: 'clients:list',
  usage: 'clients:list [--status active|disabled] [--search S]',
  summary: 'List OAuth clients, oldest first (never their secrets); --search: part of the name or client_id',
  options: { status: { type: 'string' }, search: { type: 'string' } },
  needsDatabase: true,
  parse(values) {
    const parsed = listFilter.safeParse(values);
    if (!parsed.success) throw new UsageError(describeZodError(parsed.error));
    return parsed.data;
  },
  async run(filter: z.infer<typeof listFilter>, context) {
    return (await listClients(context!.db, filter)).map((client) => clientView(client));
  },
};

export const clientsDisableCommand: CliCommand = {
  name: 'clients:disable',
  usage: 'clients:disable --client-id C',
  summary:
    'Disable a client: it can no longer authorize, get or refresh tokens, and what it holds is revoked for good',
  options: { 'client-id': { type: 'string' } },
  needsDatabase: true,
  parse(values) {
    const clientId = values['client-id'];
    if (typeof clientId !== 'string' || !clientId) throw new UsageError('--client-id is required');
    return clientId;
  },
  async run(clientId: string, context) {
    const { db, clock } = context!;
    await db.transaction(async (trx) => {
      const now = clock.now();
      if (!(await disableClient(trx, clientId, now)))
        throw new UsageError(`no client with client_id ${clientId}`);
      await auditCliChange(trx, adminAuditEventTypes.clientDisabled, { clientId }, now);
    });
    announceClientChange(clientId);
    return { client_id: clientId, is_active: false };
  },
};
