import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callbackUri, createTestClient, createTestUser } from '../support/fixtures.js';
import { runEntryPoint } from '../support/run-process.js';
import { startTestService, type TestService } from '../support/test-service.js';

// `npm run conformance` against a freshly started service, as CI runs it: every module passes.
let service: TestService;
let args: string[];
const signedOutUri = 'http://localhost:8080/signed-out';

beforeAll(async () => {
  service = await startTestService({ env: { TRUST_PROXY: 'true' } });
  const user = await createTestUser(service.service.db);
  // Clients for the modules to take in turn: each may make 20 token requests a minute (the spec's limit).
  const clients = [];
  for (let index = 0; index < 12; index++) {
    clients.push(
      await createTestClient(service.service.db, {
        type: 'confidential',
        postLogoutRedirectUris: [signedOutUri],
      }),
    );
  }
  // `--name=value`: a generated secret may start with "-", which parseArgs won't take as a separate value.
  args = Object.entries({
    issuer: service.issuer,
    'client-id': clients.map(({ client }) => client.clientId).join(','),
    'client-secret': clients.map(({ clientSecret }) => clientSecret!).join(','),
    'redirect-uri': callbackUri,
    'post-logout-redirect-uri': signedOutUri,
    username: user.email!,
    password: user.password,
  }).map(([name, value]) => `--${name}=${value}`);
});
afterAll(() => service?.close());

describe('npm run conformance', () => {
  it('passes every module against a fresh service, one line each', async () => {
    const result = await runEntryPoint('conformance/self-check.ts', args, {}, 240_000);
    const lines = result.stdout.trim().split('\n');
    expect(
      lines.filter((line) => line.startsWith('FAIL')),
      result.stdout + result.stderr,
    ).toEqual([]);
    expect(lines.filter((line) => line.startsWith('PASS')).length).toBeGreaterThanOrEqual(35);
    expect(result.code, result.stderr).toBe(0);
  }, 250_000);

  it('exits non-zero with the reason when a module fails (a wrong password: no sign-in succeeds)', async () => {
    const wrong = [
      ...args.slice(0, -1),
      '--password=not the password',
      '--only=oidcc-server,oidcc-discovery-endpoint-verification',
    ];
    const result = await runEntryPoint('conformance/self-check.ts', wrong, {}, 60_000);
    expect(result.code, result.stderr).toBe(1);
    expect(result.stdout).toMatch(/^PASS {2}oidcc-discovery-endpoint-verification/m);
    expect(result.stdout).toMatch(/^FAIL {2}oidcc-server .*Basic OP: the authorization ended on/m);
  }, 70_000);

  it('names the missing arguments', async () => {
    const result = await runEntryPoint('conformance/self-check.ts', ['--issuer', service.issuer], {}, 30_000);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--client-id');
  });
});
