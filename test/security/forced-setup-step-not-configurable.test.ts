import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parseFunnelSteps } from '../../src/cli/commands/auth-flow-admin.js';
import { UsageError } from '../../src/cli/command.js';
import { loadFunnel, replaceFunnel, type FunnelStep } from '../../src/identity/auth-flow/funnel-steps.js';
import { bearerCall } from '../support/bearer-call.js';
import { createTestUser } from '../support/fixtures.js';
import { mainAuthToken } from '../support/sign-in.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { IdentityClient, randomIp } from '../identity/support/identity-client.js';

// `mfa-setup` is the step the engine itself queues after a login's steps when a mandatory method is
// not set up yet (the forced setup). Named in a stored funnel it has nothing queued to set up: every
// login then failed with a 500 after the password (or a 401 at the start when it came first), the
// administrators' included, until someone with the CLI put the funnel back.

let service: TestService;
let client: IdentityClient;
let adminToken: string;
const baseLogin: FunnelStep[] = [
  { stepId: 'phone-email', mandatory: true, order: 10 },
  { stepId: 'password', mandatory: true, order: 20 },
];

beforeAll(async () => {
  service = await startTestService({ env: { TRUST_PROXY: 'true' } });
  client = new IdentityClient(service);
  const admin = await createTestUser(service.service.db, { roles: ['super_admin'] });
  adminToken = await mainAuthToken(service, admin, { roles: ['super_admin'], permissions: ['*'] });
});
afterAll(() => service?.close());
afterEach(() => replaceFunnel(service.service.db, 'login', baseLogin, new Date()));

describe('the forced-setup step is the engine’s, not a funnel’s', () => {
  it.each([
    ['after the password', [...baseLogin, { stepId: 'mfa-setup', mandatory: true, order: 30 }], 2],
    ['first', [{ stepId: 'mfa-setup', mandatory: true, order: 1 }, ...baseLogin], 0],
  ])('a login funnel naming mfa-setup %s is 400, and logins go on', async (_label, steps, index) => {
    const answer = await bearerCall(service, 'PUT', '/api/v2/admin/auth-flow/funnels/login', adminToken, {
      steps,
    });
    expect(answer).toMatchObject({
      status: 400,
      body: { error: 'invalid_funnel', details: [{ path: `steps.${index}.stepId` }] },
    });
    expect((await loadFunnel(service.service.db, 'login')).map((step) => step.stepId)).toEqual([
      'phone-email',
      'password',
    ]);
    const user = await createTestUser(service.service.db);
    const ip = randomIp();
    const started = await client.start('login', { ip });
    const identified = await client.pass(
      started.sessionId,
      'phone-email',
      { identifier: user.email },
      { ip },
    );
    const done = await client.step(identified.sessionId, 'password', { password: user.password }, { ip });
    expect(done.body).toMatchObject({ status: 'completed', userId: user.id });
  });

  it('the CLI refuses it too', () => {
    expect(() => parseFunnelSteps('login', ['phone-email', 'password', 'mfa-setup'])).toThrow(UsageError);
    expect(parseFunnelSteps('login', ['phone-email', 'password', 'totp'])).toHaveLength(3);
  });
});
