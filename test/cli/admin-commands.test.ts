import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCommand } from '../../src/cli/run-command.js';
import { listAuditEvents } from '../../src/identity/audit/audit-log.js';
import {
  builtInAuthenticatingLoginStepIds,
  builtInAuthMethodTypes,
  builtInStepIds,
} from '../../src/identity/auth-flow/built-in-steps.js';
import { flowKinds } from '../../src/identity/auth-flow/flow-session.js';
import {
  createdInOrder,
  createServiceClient,
  createTestClient,
  createTestUser,
} from '../support/fixtures.js';
import { discover, oidc } from '../support/relying-party.js';
import { mainAuthToken } from '../support/sign-in.js';
import { startTestService, type TestService } from '../support/test-service.js';

// The CLI's parsing and dispatch in-process (runCommand is what `npm run idp` and a running service's
// control channel both call), against the database of a running service: what the CLI changes, the
// service sees. test/cli/cli.test.ts keeps the spawned end-to-end runs.
let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service?.close());

async function idp(...argv: string[]) {
  const result = await runCommand(argv, async () => ({
    db: service.service.db,
    clock: service.service.clock,
  }));
  return {
    ...result,
    json: () => JSON.parse(result.stdout) as Record<string, unknown>,
  };
}

async function expectInvalidClient(attempt: Promise<unknown>) {
  const refusal = await attempt.then(
    () => undefined,
    (error: unknown) => error as { status?: number; cause?: unknown },
  );
  expect(refusal?.status).toBe(401);
  expect(JSON.stringify(refusal?.cause)).toContain('invalid_client');
}

describe('npm run idp -- clients:*', () => {
  it('gets, updates, rotates, disables, enables and deletes a client; audited via cli', async () => {
    const { db } = service.service;
    const { client, clientSecret } = await createServiceClient(db, ['service:crm.aggregates.read']);
    const tokenWith = async (secret: string) =>
      oidc.clientCredentialsGrant(await discover(service.issuer, client.clientId, secret));

    expect((await idp('clients:get', '--client-id', client.clientId)).json()).toMatchObject({
      client_id: client.clientId,
      name: 'Test service',
    });
    const renamed = await idp('clients:update', '--client-id', client.clientId, '--name', 'Renamed');
    expect(renamed.exitCode).toBe(0);
    expect(renamed.json()).toMatchObject({ name: 'Renamed' });

    const rotated = await idp('clients:rotate-secret', '--client-id', client.clientId);
    const newSecret = String(rotated.json().client_secret);
    await expectInvalidClient(tokenWith(clientSecret!));
    const token = await tokenWith(newSecret);

    expect((await idp('clients:disable', '--client-id', client.clientId)).exitCode).toBe(0);
    await expectInvalidClient(tokenWith(newSecret));
    const introspection = await fetch(service.url('/oauth/introspect'), {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${client.clientId}:${newSecret}`).toString('base64')}`,
      },
      body: new URLSearchParams({ token: token.access_token }),
    });
    expect(introspection.status).toBe(401);

    expect((await idp('clients:enable', '--client-id', client.clientId)).json()).toMatchObject({
      is_active: true,
    });
    await tokenWith(newSecret);
    expect((await idp('clients:delete', '--client-id', client.clientId)).exitCode).toBe(0);
    expect((await idp('clients:get', '--client-id', client.clientId)).exitCode).toBe(2);

    const events = await listAuditEvents(db, { limit: 20 });
    const ofClient = events.filter((event) => event.details.clientId === client.clientId);
    expect(ofClient.map((event) => event.type)).toEqual([
      'admin.oauth_client.deleted',
      'admin.oauth_client.enabled',
      'admin.oauth_client.disabled',
      'admin.oauth_client.secret_rotated',
      'admin.oauth_client.updated',
    ]);
    expect(ofClient.every((event) => event.details.via === 'cli')).toBe(true);
  });

  it('lists clients by status and search', async () => {
    const marker = `Listed-${Date.now()}`;
    const { db } = service.service;
    const [first, second] = [
      (await createTestClient(db, { name: `${marker} a` })).client,
      (await createTestClient(db, { name: `${marker} b` })).client,
    ];
    await createdInOrder(db, 'oauth_clients', [
      { client_id: first.clientId },
      { client_id: second.clientId },
    ]);
    await idp('clients:disable', '--client-id', second.clientId);
    const names = async (...argv: string[]) =>
      (JSON.parse((await idp('clients:list', ...argv)).stdout) as { name: string }[]).map(
        (client) => client.name,
      );
    expect(await names('--search', marker)).toEqual([first.name, second.name]);
    expect(await names('--search', marker, '--status', 'active')).toEqual([first.name]);
    expect(await names('--search', marker, '--status', 'disabled')).toEqual([second.name]);
    expect((await idp('clients:list', '--status', 'gone')).exitCode).toBe(2);
  });

  it.each([
    [['clients:get'], '--client-id is required'],
    [['clients:update', '--client-id', 'x'], 'nothing to change'],
    [['clients:update', '--client-id', 'x', '--grant-type', 'implicit'], '--grant-type'],
    [['clients:rotate-secret', '--client-id', 'nope'], 'no client with client_id nope'],
    [['clients:enable', '--client-id', 'x', '--bogus'], "Unknown option '--bogus'"],
  ])('refuses %j with exit code 2 and says why', async (argv, message) => {
    const result = await idp(...argv);
    expect(result.exitCode).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain(message);
  });

  it('refuses an update the registration rules refuse, changing nothing', async () => {
    const { client } = await createTestClient(service.service.db, { name: 'Kept' });
    const result = await idp(
      'clients:update',
      '--client-id',
      client.clientId,
      '--redirect-uri',
      'https://*.x.com/cb',
    );
    expect(result.exitCode).toBe(2);
    expect((await idp('clients:get', '--client-id', client.clientId)).json()).toMatchObject({
      redirect_uris: client.redirectUris,
    });
  });
});

describe('npm run idp -- funnels:* and allowed-methods:*', () => {
  it('sets and shows a funnel, optional steps and groups included', async () => {
    const set = await idp(
      'funnels:set',
      '--flow',
      'registration',
      '--step',
      'phone-email',
      '--step',
      'otp-code',
      '--step',
      'password:optional@credentials',
    );
    expect(set.exitCode).toBe(0);
    expect((await idp('funnels:get', '--flow', 'registration')).json()).toEqual({
      flow: 'registration',
      steps: [
        { stepId: 'phone-email', mandatory: true, order: 1 },
        { stepId: 'otp-code', mandatory: true, order: 2 },
        { stepId: 'password', mandatory: false, order: 3, group: 'credentials' },
      ],
    });
    const started = await service.service.flows.start('registration', {
      ip: '203.0.113.1',
      userAgent: 'cli test',
    });
    expect(started.session.pendingSteps).toEqual(['phone-email', 'otp-code', 'password']);
  });

  it.each([
    [
      ['funnels:set', '--flow', 'checkout', '--step', 'password'],
      '--flow must be one of login, registration',
    ],
    [['funnels:set', '--flow', 'login'], 'give the funnel'],
    [['funnels:set', '--flow', 'registration', '--step', 'mfa-setup'], 'not a step of the registration flow'],
    [['funnels:set', '--flow', 'login', '--step', 'password', '--step', 'password'], 'appears twice'],
    [
      ['funnels:set', '--flow', 'login', '--step', 'password:sometimes'],
      'expected id[=provider][:optional][@group]',
    ],
    [['funnels:set', '--flow', 'login', '--step', 'oauth'], 'the oauth step names its provider'],
    [
      ['funnels:set', '--flow', 'login', '--step', 'phone-email', '--step', 'consent'],
      'a login funnel needs a step that proves who signs in',
    ],
    [['allowed-methods:set'], 'give --method'],
    [['allowed-methods:set', '--method', 'carrier-pigeon'], 'not one of'],
  ])('refuses %j with exit code 2', async (argv, message) => {
    const before = await idp('funnels:get', '--flow', 'login');
    const result = await idp(...argv);
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toContain(message);
    expect((await idp('funnels:get', '--flow', 'login')).stdout).toBe(before.stdout);
  });

  it('sets the allowed methods (or none)', async () => {
    expect((await idp('allowed-methods:set', '--none')).json()).toEqual({ methods: [] });
    expect((await idp('allowed-methods:get')).json()).toEqual({ methods: [] });
    expect((await idp('allowed-methods:set', '--method', 'totp')).json()).toEqual({ methods: ['totp'] });
  });

  it('knows exactly the steps and methods the service registers', () => {
    // A step or method added to the service must be added to src/identity/auth-flow/built-in-steps.ts.
    const { steps, authMethods } = service.service;
    for (const flow of flowKinds) {
      expect(
        steps
          .ids()
          .filter((id) => steps.has(id, flow))
          .sort(),
        `the built-in steps of the ${flow} flow`,
      ).toEqual([...builtInStepIds[flow]].sort());
    }
    expect(
      steps
        .ids()
        .filter((id) => steps.get(id, 'login')?.authenticates === true)
        .sort(),
      'the built-in login steps that prove who signs in',
    ).toEqual([...builtInAuthenticatingLoginStepIds].sort());
    expect(
      authMethods
        .all()
        .map((method) => method.type)
        .sort(),
    ).toEqual([...builtInAuthMethodTypes].sort());
  });
});

describe('npm run idp -- users:*', () => {
  it('finds a user, disables (sessions revoked), enables, unlocks and revokes sessions', async () => {
    const user = await createTestUser(service.service.db);
    const token = await mainAuthToken(service, user);
    const sessionsStatus = async () =>
      (
        await fetch(service.url('/api/v2/identity/security/sessions'), {
          headers: { authorization: `Bearer ${token}` },
        })
      ).status;
    expect(await sessionsStatus()).toBe(200);

    const found = (await idp('users:find', '--search', user.email!)).json();
    expect(found).toMatchObject({ total: 1, users: [{ id: user.id, status: 'active' }] });

    expect((await idp('users:disable', '--user-id', user.id)).json()).toMatchObject({
      status: 'disabled',
      revoked_sessions: 1,
    });
    expect(await sessionsStatus()).toBe(401);
    expect((await idp('users:find', '--search', user.email!, '--status', 'disabled')).json()).toMatchObject({
      total: 1,
    });
    expect((await idp('users:enable', '--user-id', user.id)).json()).toMatchObject({ status: 'active' });
    expect((await idp('users:unlock', '--user-id', user.id)).json()).toMatchObject({
      lifted: 0,
      locked_sources: 0,
    });
    expect((await idp('users:revoke-sessions', '--user-id', user.id)).json()).toMatchObject({
      revoked_sessions: 0,
    });
  });

  it.each([
    [['users:disable'], '--user-id must be a user id'],
    [['users:disable', '--user-id', '3f2a6c1e-8d4b-4c7a-9e2f-1b5d6a7c8e9f'], 'no user with id'],
    [['users:find', '--limit', 'lots'], '--limit'],
    [['users:find', '--status', 'gone'], '--status'],
  ])('refuses %j with exit code 2', async (argv, message) => {
    const result = await idp(...argv);
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toContain(message);
  });

  it('lists every admin command in the help', async () => {
    const help = await idp('help');
    for (const name of ['clients:rotate-secret', 'funnels:set', 'allowed-methods:set', 'users:unlock']) {
      expect(help.stderr).toContain(name);
    }
  });
});
