import { z } from 'zod';
import { adminAuditEventTypes, auditCliChange } from '../../admin/admin-audit.js';
import {
  announceClientChange,
  clientView,
  deleteClient,
  enableClient,
  findClient,
  grantTypes,
  rotateClientSecret,
  setClientFirstParty,
  updateClient,
  type ClientChanges,
} from '../../oidc/models/oauth-client.js';
import { splitScope } from '../../oidc/scopes.js';
import { UsageError, type CliCommand, type CommandContext, type OptionValues } from '../command.js';

const asList = (value: unknown) => (Array.isArray(value) ? value : value === undefined ? undefined : [value]);

function clientIdOf(values: OptionValues): string {
  const clientId = values['client-id'];
  if (typeof clientId !== 'string' || !clientId) throw new UsageError('--client-id is required');
  return clientId;
}

const noClient = (clientId: string) => new UsageError(`no client with client_id ${clientId}`);

/** A change and its audit event in one transaction; the client cache hears of it after the commit. */
async function changeClient<T>(
  context: CommandContext,
  clientId: string,
  work: (trx: CommandContext['db'], now: Date) => Promise<T>,
): Promise<T> {
  const result = await context.db.transaction((trx) =>
    work(trx as unknown as CommandContext['db'], context.clock.now()),
  );
  announceClientChange(clientId);
  return result;
}

export const clientsGetCommand: CliCommand = {
  name: 'clients:get',
  usage: 'clients:get --client-id C',
  summary: 'Show one OAuth client (never its secret)',
  options: { 'client-id': { type: 'string' } },
  needsDatabase: true,
  parse: clientIdOf,
  async run(clientId: string, context) {
    const client = await findClient(context!.db, clientId);
    if (!client) throw noClient(clientId);
    return clientView(client);
  },
};

const changesSchema = z.object({
  name: z.string().optional(),
  redirectUris: z.array(z.string()).optional(),
  postLogoutRedirectUris: z.array(z.string()).optional(),
  scopes: z.array(z.string()).optional(),
  grantTypes: z.array(z.enum(grantTypes, { error: `must be one of ${grantTypes.join(', ')}` })).optional(),
});

export const clientsUpdateCommand: CliCommand = {
  name: 'clients:update',
  usage:
    'clients:update --client-id C [--name N] [--redirect-uri U]... [--post-logout-redirect-uri U]... [--scope S]... [--grant-type G]... [--first-party true|false]',
  summary:
    'Change a client (a list given replaces the stored one; --first-party gives or takes the mark); checked by the registration rules',
  options: {
    'client-id': { type: 'string' },
    name: { type: 'string' },
    'redirect-uri': { type: 'string', multiple: true },
    'post-logout-redirect-uri': { type: 'string', multiple: true },
    scope: { type: 'string', multiple: true },
    'grant-type': { type: 'string', multiple: true },
    'first-party': { type: 'string' },
  },
  needsDatabase: true,
  parse(values) {
    const clientId = clientIdOf(values);
    // The operator's first-party mark (no API sets it), given or taken away.
    const firstPartyFlag = values['first-party'];
    if (firstPartyFlag !== undefined && firstPartyFlag !== 'true' && firstPartyFlag !== 'false') {
      throw new UsageError('--first-party: must be true or false');
    }
    const parsed = changesSchema.safeParse({
      name: values.name,
      redirectUris: asList(values['redirect-uri']),
      postLogoutRedirectUris: asList(values['post-logout-redirect-uri']),
      scopes: asList(values.scope)?.flatMap((scope) => splitScope(String(scope))),
      grantTypes: asList(values['grant-type']),
    });
    if (!parsed.success) {
      throw new UsageError(parsed.error.issues.map((issue) => `--grant-type: ${issue.message}`).join('; '));
    }
    const changes = Object.fromEntries(
      Object.entries(parsed.data).filter(([, value]) => value !== undefined),
    ) as ClientChanges;
    const firstParty = firstPartyFlag === undefined ? undefined : firstPartyFlag === 'true';
    if (Object.keys(changes).length === 0 && firstParty === undefined) {
      throw new UsageError('nothing to change');
    }
    return { clientId, changes, firstParty };
  },
  async run(
    { clientId, changes, firstParty }: { clientId: string; changes: ClientChanges; firstParty?: boolean },
    context,
  ) {
    const client = await changeClient(context!, clientId, async (trx, now) => {
      let updated =
        Object.keys(changes).length > 0 ? await updateClient(trx, clientId, changes, now) : undefined;
      if (firstParty !== undefined) updated = await setClientFirstParty(trx, clientId, firstParty, now);
      if (!updated) throw noClient(clientId);
      const fields = [...Object.keys(changes), ...(firstParty === undefined ? [] : ['firstParty'])];
      await auditCliChange(trx, adminAuditEventTypes.clientUpdated, { clientId, fields }, now);
      return updated;
    });
    return clientView(client);
  },
};

export const clientsEnableCommand: CliCommand = {
  name: 'clients:enable',
  usage: 'clients:enable --client-id C',
  summary: 'Enable a disabled client again',
  options: { 'client-id': { type: 'string' } },
  needsDatabase: true,
  parse: clientIdOf,
  async run(clientId: string, context) {
    await changeClient(context!, clientId, async (trx, now) => {
      if (!(await enableClient(trx, clientId, now))) throw noClient(clientId);
      await auditCliChange(trx, adminAuditEventTypes.clientEnabled, { clientId }, now);
    });
    return { client_id: clientId, is_active: true };
  },
};

export const clientsDeleteCommand: CliCommand = {
  name: 'clients:delete',
  usage: 'clients:delete --client-id C',
  summary: 'Delete a client with its consents and refresh tokens; its access tokens stop working',
  options: { 'client-id': { type: 'string' } },
  needsDatabase: true,
  parse: clientIdOf,
  async run(clientId: string, context) {
    await changeClient(context!, clientId, async (trx, now) => {
      const client = await findClient(trx, clientId);
      if (!client || !(await deleteClient(trx, clientId))) throw noClient(clientId);
      await auditCliChange(trx, adminAuditEventTypes.clientDeleted, { clientId, name: client.name }, now);
    });
    return { client_id: clientId, deleted: true };
  },
};

export const clientsRotateSecretCommand: CliCommand = {
  name: 'clients:rotate-secret',
  usage: 'clients:rotate-secret --client-id C',
  summary: 'Give a confidential client a new secret (printed once); the old one stops working',
  options: { 'client-id': { type: 'string' } },
  needsDatabase: true,
  parse: clientIdOf,
  async run(clientId: string, context) {
    const rotated = await changeClient(context!, clientId, async (trx, now) => {
      const result = await rotateClientSecret(trx, clientId, now);
      if (!result) throw noClient(clientId);
      await auditCliChange(trx, adminAuditEventTypes.clientSecretRotated, { clientId }, now);
      return result;
    });
    return {
      ...clientView(rotated.client),
      client_secret: rotated.clientSecret,
      note: 'the client_secret is shown only now; store it',
    };
  },
};
