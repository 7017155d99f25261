import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withPasswordFromStdin } from '../../src/cli/password-from-stdin.js';
import { runCommand } from '../../src/cli/run-command.js';
import { findPasswordHash } from '../../src/identity/passwords/password-credential.js';
import { verifyPassword } from '../../src/identity/passwords/password-hash.js';
import { systemClock } from '../../src/clock.js';
import type { DatabaseHandle } from '../../src/db/database.js';
import { signingKeyFromPem } from '../../src/keys/signing-keys.js';
import { createTestDatabase, onPostgres } from '../support/database.js';
import { repositoryRoot, runEntryPoint, type ProcessResult } from '../support/run-process.js';
import { freePort } from '../support/free-port.js';
import { newDataDirectory } from '../support/new-data-directory.js';

let environment: Record<string, string>;
let cleanup: () => Promise<void>;

beforeAll(async () => {
  const dataDir = await newDataDirectory('idp-cli-');
  if (onPostgres) {
    const database = await createTestDatabase();
    await database.db.destroy();
    environment = { DATABASE_URL: database.url!, DATA_DIR: dataDir };
    cleanup = async () => {
      await database.close().catch(() => undefined);
      await fs.rm(dataDir, { recursive: true, force: true, maxRetries: 5 });
    };
  } else {
    environment = { DATA_DIR: dataDir };
    cleanup = () => fs.rm(dataDir, { recursive: true, force: true, maxRetries: 5 });
  }
});
afterAll(() => cleanup?.());

const idp = (...args: string[]) => runEntryPoint('src/cli/main.ts', args, environment);
const json = (stdout: string) => JSON.parse(stdout) as Record<string, unknown>;

describe('npm run idp -- <command> (the command line, in this process)', () => {
  let database: DatabaseHandle;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(() => database?.close());
  // What main.ts does after parsing the environment: run the command line against an open database.
  const run = (...args: string[]) => runCommand(args, async () => ({ db: database.db, clock: systemClock }));

  it('creates users, clients, lists and disables them, printing JSON', async () => {
    const email = `admin-${crypto.randomBytes(4).toString('hex')}@example.com`;
    const user = await run(
      'users:create',
      '--email',
      email,
      '--password',
      'a long passphrase',
      '--role',
      'super_admin',
    );
    expect(user.stderr).toBe('');
    expect(user.exitCode).toBe(0);
    expect(json(user.stdout)).toMatchObject({ email, roles: ['super_admin'] });

    const confidential = await run(
      'clients:create',
      '--name',
      'Backoffice',
      '--type',
      'confidential',
      '--redirect-uri',
      'https://app.example.com/callback',
      '--post-logout-redirect-uri',
      'https://app.example.com/',
      '--scope',
      'openid',
      '--scope',
      'profile email',
    );
    expect(confidential.exitCode).toBe(0);
    const created = json(confidential.stdout);
    expect(created).toMatchObject({
      name: 'Backoffice',
      type: 'confidential',
      allowed_scopes: ['openid', 'profile', 'email'],
      grant_types: ['authorization_code', 'refresh_token'],
      is_active: true,
    });
    expect(String(created.client_secret).length).toBeGreaterThanOrEqual(43);

    const service = await run(
      'clients:create',
      '--name',
      'CRM reader',
      '--type',
      'confidential',
      '--grant-type',
      'client_credentials',
      '--scope',
      'service:crm.aggregates.read',
    );
    expect(service.exitCode).toBe(0);

    const list = await run('clients:list');
    expect(list.exitCode).toBe(0);
    expect(list.stdout).not.toContain(String(created.client_secret));
    expect(list.stdout).not.toContain('secret');
    const clients = JSON.parse(list.stdout) as { client_id: string }[];
    expect(clients.map((client) => client.client_id)).toContain(created.client_id);

    const disabled = await run('clients:disable', '--client-id', String(created.client_id));
    expect(disabled.stderr).toBe('');
    expect(disabled.exitCode).toBe(0);
    expect(json(disabled.stdout)).toEqual({ client_id: created.client_id, is_active: false });
  });

  it('takes a client id that starts with a dash (a generated id may) as the value of --client-id', async () => {
    const created = json(
      (
        await run(
          'clients:create',
          '--name',
          'Dash',
          '--type',
          'public',
          '--redirect-uri',
          'https://app.example.com/cb',
          '--scope',
          'openid',
        )
      ).stdout,
    );
    const dashed = `-${String(created.client_id)}`;
    await database.db('oauth_clients').where({ client_id: created.client_id }).update({ client_id: dashed });

    const shown = await run('clients:get', '--client-id', dashed);
    expect(shown.stderr).toBe('');
    expect(json(shown.stdout)).toMatchObject({ client_id: dashed, name: 'Dash' });
    const disabled = await run('clients:disable', '--client-id', dashed);
    expect(disabled.stderr).toBe('');
    expect(json(disabled.stdout)).toEqual({ client_id: dashed, is_active: false });
  });

  it.each([
    [
      ['users:create', '--email', 'not-an-email', '--password', 'long enough pass'],
      /--email: must be an email address/,
    ],
    [
      ['users:create', '--email', 'short@example.com', '--password', 'short'],
      /--password: must have at least 8 characters/,
    ],
    [
      ['users:create', '--email', 'x@example.com', '--password', 'long enough pass', '--role', 'emperor'],
      /unknown role emperor/,
    ],
    [
      ['clients:create', '--name', 'x', '--type', 'public', '--scope', 'openid'],
      /--redirect-uri: authorization_code needs at least one redirect URI/,
    ],
    [
      [
        'clients:create',
        '--name',
        'x',
        '--type',
        'public',
        '--redirect-uri',
        'http://evil.example.com/cb',
        '--scope',
        'openid',
      ],
      /--redirect-uri/,
    ],
    [
      [
        'clients:create',
        '--name',
        'x',
        '--type',
        'confidential',
        '--grant-type',
        'client_credentials',
        '--scope',
        'service:made.up',
      ],
      /Unknown catalogue permission in service:made\.up/,
    ],
    [['clients:create', '--name', 'x', '--type', 'weird', '--scope', 'openid'], /--type/],
    [['clients:disable', '--client-id', 'nobody'], /no client with client_id nobody/],
    [['clients:list', '--bogus'], /Unknown option '--bogus'/],
    [['frobnicate'], /unknown command frobnicate/],
  ])('refuses bad input %j with exit code 2 and a message', async (args, message) => {
    const result = await run(...args);
    expect(result.exitCode).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(message);
  });

  // Arguments show in `ps` to every user of the machine: the password can come on standard input.
  it('takes the password from standard input with --password-stdin, never two of them', async () => {
    const email = `stdin-${crypto.randomBytes(4).toString('hex')}@example.com`;
    const argv = await withPasswordFromStdin(
      ['users:create', '--email', email, '--password-stdin'],
      async () => 'a passphrase from stdin\r\nsecond line ignored\n',
    );
    const created = await run(...argv);
    expect(created.exitCode).toBe(0);
    const { id } = json(created.stdout) as { id: string };
    const hash = await findPasswordHash(database.db, id);
    expect(await verifyPassword(hash, 'a passphrase from stdin')).toBe(true);

    const short = await run(
      ...(await withPasswordFromStdin(
        ['users:create', '--email', `x${email}`, '--password-stdin'],
        async () => 'short\n',
      )),
    );
    expect(short.stderr).toMatch(/--password: must have at least 8 characters/);

    await expect(
      withPasswordFromStdin(
        ['users:create', '--password', 'a long passphrase', '--password-stdin'],
        async () => '',
      ),
    ).rejects.toThrow(/give --password or --password-stdin, not both/);
  });

  it('generates an RSA-2048 private key the service accepts', async () => {
    const result = await run('keys:generate');
    expect(result.exitCode).toBe(0);
    const { private_key_pem: pem, kid } = json(result.stdout) as { private_key_pem: string; kid: string };
    const key = await signingKeyFromPem(pem, 'oidc');
    expect(key.kid).toBe(kid);
    expect(key.privateKey.asymmetricKeyDetails?.modulusLength).toBe(2048);
  });
});

describe('npm run idp -- <command> (as a process)', () => {
  it('opens and migrates the configured database, prints JSON and exits 0', async () => {
    const email = `process-${crypto.randomBytes(4).toString('hex')}@example.com`;
    // The first start creates the embedded database and runs every migration: the slow one.
    const user = await runEntryPoint(
      'src/cli/main.ts',
      ['users:create', '--email', email, '--password-stdin'],
      environment,
      110_000,
      'a long passphrase\n',
    );
    expect(user.stderr).toBe('');
    expect(user.code).toBe(0);
    expect(json(user.stdout)).toMatchObject({ email, roles: [] });
  }, 120_000);

  // Commands refused before they open the database: they don't need the data directory, so they run side
  // by side (each process costs a second or more of CPU for tsx to load the CLI).
  let refusals: Promise<Record<'asBin' | 'help' | 'fromRepository', ProcessResult>> | undefined;
  const refused = () =>
    (refusals ??= Promise.all([
      idp('clients:list', '--bogus'),
      idp('--help'),
      // `npm run idp -- ...` runs the script with npm_lifecycle_event=idp.
      runEntryPoint('src/cli/main.ts', ['clients:list', '--bogus'], {
        ...environment,
        npm_lifecycle_event: 'idp',
      }),
    ]).then(([asBin, help, fromRepository]) => ({ asBin, help, fromRepository })));

  it('exits 2 with the message on stderr and nothing on stdout for bad input', async () => {
    const { asBin: result } = await refused();
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/Unknown option '--bogus'/);
  }, 60_000);

  it('names itself in its usage lines as it was invoked: the bin, or npm run idp from the repository', async () => {
    const { asBin, help, fromRepository } = await refused();
    expect(asBin.stderr).toContain('usage: identity-service clients:list');
    expect(asBin.stderr).not.toContain('npm run idp');
    expect(help.stderr).toMatch(/^usage: identity-service <command> \[options\]$/m);
    expect(fromRepository.stderr).toContain('usage: npm run idp -- clients:list');
  }, 60_000);
});

describe('the CLI while npm start runs', () => {
  let server: ChildProcess | undefined;
  afterAll(async () => {
    if (!server || server.exitCode !== null) return;
    const exited = new Promise((resolve) => server!.once('exit', resolve));
    server.kill('SIGTERM');
    // The data directory is removed after this: wait until the service has let go of it.
    await exited;
  });

  it('works against the running service (on PGlite, by handing it the command)', async () => {
    const port = await freePort();
    server = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      cwd: repositoryRoot,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        ...environment,
        PORT: String(port),
        LOG_LEVEL: 'info',
      },
    });
    let log = '';
    server.stdout!.on('data', (chunk: Buffer) => (log += chunk.toString()));
    server.stderr!.on('data', (chunk: Buffer) => (log += chunk.toString()));
    for (let waited = 0; !log.includes('listening on') && waited < 40_000; waited += 200) {
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(log).toContain('listening on');

    const created = await idp(
      'clients:create',
      '--name',
      'While running',
      '--type',
      'public',
      '--redirect-uri',
      'http://localhost:9000/cb',
      '--scope',
      'openid',
    );
    expect(created.stderr).toBe('');
    expect(created.code).toBe(0);
    const { client_id: clientId } = json(created.stdout);

    // The running service sees the client at once: its authorize endpoint knows it.
    const authorize = await fetch(
      `http://127.0.0.1:${port}/oauth/authorize?client_id=${clientId}&response_type=code&scope=openid&redirect_uri=${encodeURIComponent('http://localhost:9000/cb')}&code_challenge=${'a'.repeat(43)}&code_challenge_method=S256`,
      { redirect: 'manual' },
    );
    expect(authorize.status).toBe(303);
    expect(authorize.headers.get('location')).toMatch(/^\/en\/auth\?interaction=/);

    // A command handed to the service still names the CLI as the operator invoked it. These processes
    // are independent of each other: side by side.
    const [refused, refusedAsBin, second] = await Promise.all([
      runEntryPoint('src/cli/main.ts', ['clients:disable', '--client-id', 'nobody'], {
        ...environment,
        npm_lifecycle_event: 'idp',
      }),
      idp('clients:disable', '--client-id', 'nobody'),
      // PGlite is one process: a second service can't open the same data directory.
      onPostgres
        ? undefined
        : freePort().then((secondPort) =>
            runEntryPoint('src/main.ts', [], { ...environment, PORT: String(secondPort) }),
          ),
    ]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/no client with client_id nobody\nusage: npm run idp -- clients:disable/);
    expect(refusedAsBin.stderr).toContain('usage: identity-service clients:disable');

    if (!second) return;
    expect(second.code).toBe(1);
    expect(second.stderr).toMatch(/Cannot start: the embedded database in .* is in use by another process/);
  }, 120_000);
});
