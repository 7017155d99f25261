import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadUserAccess } from '../../src/identity/access/user-access.js';
import { generateRsaPrivateKeyPem } from '../../src/keys/development-secrets.js';
import { signingKeyFromPem } from '../../src/keys/signing-keys.js';
import { createTestDatabase } from '../support/database.js';
import { createTestUser } from '../support/fixtures.js';
import { insertTestSession, signMainAuthToken } from '../support/sign-in.js';
import { createRole } from '../platform/support/platform-tokens.js';
import { repositoryRoot } from '../support/run-process.js';
import { freePort } from '../support/free-port.js';

// PostgreSQL only (HTTP_WORKERS > 1 needs DATABASE_URL): `npm start` as a cluster of two workers.
let database: Awaited<ReturnType<typeof createTestDatabase>>;
let primary: ChildProcess;
let output = '';
let port = 0;
const mainAuthPem = generateRsaPrivateKeyPem();

/** The worker processes of the cluster (children of the supervising process). */
const workerPids = () =>
  fs
    .readFileSync(`/proc/${primary.pid}/task/${primary.pid}/children`, 'utf8')
    .trim()
    .split(/\s+/)
    .filter(Boolean)
    .map(Number);

/** A request on a connection of its own: the cluster hands new connections to the workers in turn. */
function request(method: string, path: string, token?: string, body?: unknown) {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const outgoing = http.request(
      {
        host: '127.0.0.1',
        port,
        method,
        path,
        agent: false,
        headers: {
          ...(token ? { authorization: `Bearer ${token}` } : {}),
          ...(payload ? { 'content-type': 'application/json' } : {}),
        },
      },
      (response) => {
        let text = '';
        response.on('data', (chunk: Buffer) => (text += chunk.toString()));
        response.on('end', () => resolve({ status: response.statusCode!, body: text }));
      },
    );
    outgoing.on('error', reject);
    outgoing.end(payload);
  });
}

async function tokenWith(permissions: string[]): Promise<string> {
  const { db } = database;
  const user = await createTestUser(db, { roles: [await createRole(db, permissions)], password: null });
  return signMainAuthToken(
    await signingKeyFromPem(mainAuthPem, 'main-auth'),
    { issuer: `http://127.0.0.1:${port}`, audience: 'urn:ecosystem:api' },
    user,
    { ...(await loadUserAccess(db, user.id)), sessionId: await insertTestSession(db, user.id) },
  );
}

/** Starts `npm start`'s cluster on a free port; answers once both workers listen. */
async function startCluster(): Promise<void> {
  port = await freePort();
  output = '';
  primary = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: repositoryRoot,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      DATABASE_URL: database.url,
      HTTP_WORKERS: '2',
      PORT: String(port),
      HOST: '127.0.0.1',
      ISSUER: `http://127.0.0.1:${port}`,
      OIDC_PRIVATE_KEY: generateRsaPrivateKeyPem(),
      MAIN_AUTH_PRIVATE_KEY: mainAuthPem,
      COOKIE_KEYS: crypto.randomBytes(32).toString('base64url'),
      DATA_DIR: fs.mkdtempSync('/tmp/idp-cluster-'),
      LOG_LEVEL: 'info',
    },
  });
  const collect = (chunk: Buffer) => (output += chunk.toString());
  primary.stdout!.on('data', collect);
  primary.stderr!.on('data', collect);
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the cluster did not start:\n${output}`)), 45_000);
    const check = () => {
      if (/listening on .* \(2 workers\)/.test(output)) {
        clearTimeout(timer);
        resolve();
      }
    };
    primary.stdout!.on('data', check);
    primary.stderr!.on('data', check);
    primary!.once('exit', (code) => reject(new Error(`the cluster exited with ${code}:\n${output}`)));
  });
}

beforeAll(async () => {
  database = await createTestDatabase();
  // The free port is probed, then given to the cluster: another test file's server may take it in
  // between (files run in parallel). Then start again on another.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startCluster();
    } catch (error) {
      if (attempt === 3 || !/is already in use/.test((error as Error).message)) throw error;
    }
  }
}, 90_000);

afterAll(async () => {
  if (primary && primary.exitCode === null) {
    primary.kill('SIGKILL');
    for (const pid of workerPids()) process.kill(pid, 'SIGKILL');
  }
  await database?.close();
});

describe('npm start with HTTP_WORKERS=2 (node:cluster)', () => {
  it('serves from two worker processes on one port', async () => {
    expect(workerPids()).toHaveLength(2);
    for (let attempt = 0; attempt < 4; attempt++) {
      const discovery = await request('GET', '/.well-known/openid-configuration');
      expect(discovery.status).toBe(200);
      expect(JSON.parse(discovery.body).issuer).toBe(`http://127.0.0.1:${port}`);
    }
    // Worker 1 alone ran the migrations: the schema was already current, nobody logged a migration.
    expect(output).not.toMatch(/database migrated/);
  });

  it("a change on one worker reaches the other's reference-data cache at once (embedded bus spans workers)", async () => {
    const reader = await tokenWith([]);
    const admin = await tokenWith(['platform.reference-data.manage']);
    // Requests one after another, each on a new connection: the cluster hands them to the workers in turn.
    const keysSeenByBothWorkers = async () => {
      const lists: string[][] = [];
      for (const _worker of [1, 2]) {
        const response = await request('GET', '/api/v2/platform/reference/subjects', reader);
        expect(response.status).toBe(200);
        lists.push((JSON.parse(response.body) as { items: { key: string }[] }).items.map((item) => item.key));
      }
      return lists;
    };
    await keysSeenByBothWorkers(); // both workers have the list cached now

    // Worker 1 alone publishes the outbox: a change made on worker 1 reaches worker 2's cache only if the
    // event is forwarded (else worker 2 serves its cached list for 60 s). Each round is three connections,
    // so the changes land on the two workers in turn.
    for (let round = 0; round < 4; round++) {
      const key = `subject_${crypto.randomBytes(4).toString('hex')}`;
      const created = await request('POST', '/api/v2/platform/reference/subjects', admin, {
        key,
        title: { en: 'Cluster test', ru: 'Кластер' },
      });
      expect(created.status, created.body).toBe(201);
      await expect
        .poll(async () => (await keysSeenByBothWorkers()).every((list) => list.includes(key)), {
          timeout: 5_000,
        })
        .toBe(true);
    }
  });

  it('replaces a worker that dies while serving', async () => {
    const [victim] = workerPids();
    process.kill(victim!, 'SIGKILL');
    await expect
      .poll(() => workerPids().length === 2 && !workerPids().includes(victim!), {
        timeout: 30_000,
        interval: 200,
      })
      .toBe(true);
    await expect
      .poll(() => output, { timeout: 30_000 })
      .toMatch(/worker 1 ready[\s\S]*worker died[\s\S]*ready/);
    for (let attempt = 0; attempt < 4; attempt++) {
      expect((await request('GET', '/.well-known/jwks.json')).status).toBe(200);
    }
  }, 60_000);

  it('SIGTERM stops the workers, then the supervisor, with exit code 0', async () => {
    const workers = workerPids();
    const exited = new Promise<number | null>((resolve) => primary.once('exit', (code) => resolve(code)));
    primary.kill('SIGTERM');
    expect(await exited).toBe(0);
    for (const pid of workers) expect(fs.existsSync(`/proc/${pid}`)).toBe(false);
  }, 30_000);
});
