import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allowedMethodsSetting } from '../../src/identity/auth-flow/allowed-methods.js';
import { replaceFunnel, type FunnelStep } from '../../src/identity/auth-flow/funnel-steps.js';
import { writeSetting } from '../../src/platform/settings/platform-settings.js';
import { bearerCall } from '../support/bearer-call.js';
import { createTestUser } from '../support/fixtures.js';
import { untilWaitingForLocks } from '../support/lock-waits.js';
import { mainAuthToken } from '../support/sign-in.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { IdentityClient, MovableClock, randomIp } from '../identity/support/identity-client.js';
import { setUpTotp } from '../identity/support/totp-codes.js';

/**
 * PostgreSQL only (runs when DATABASE_URL is set). A delegated flow manager (identity.auth_flow.manage)
 * may not make a super administrator's login ask less (sign-in-authority.ts). Alone, neither taking
 * TOTP off the allowed methods nor out of the funnel does, while the other still asks it; sent at the
 * same moment, each judged the administrator still asked by the other, uncommitted, and both went
 * through: the administrator's login ended at the password.
 */
let service: TestService;
let client: IdentityClient;
const clock = new MovableClock();
beforeAll(async () => {
  service = await startTestService({ env: { TRUST_PROXY: 'true' }, clock });
  client = new IdentityClient(service);
});
afterAll(() => service?.close());

const baseLogin: FunnelStep[] = [
  { stepId: 'phone-email', mandatory: true, order: 10 },
  { stepId: 'password', mandatory: true, order: 20 },
];

describe('two sign-in changes of a flow manager at the same moment on PostgreSQL', () => {
  it('can not together stop asking a super administrator for their authenticator code', async () => {
    const { db } = service.service;
    await writeSetting(db, allowedMethodsSetting, ['totp'], new Date());
    const admin = await createTestUser(db, { roles: ['super_admin'] });
    await setUpTotp(client, await client.login(admin.email!, admin.password), clock);
    // TOTP asked twice over: by the funnel and as the administrator's own added method.
    await replaceFunnel(
      db,
      'login',
      [...baseLogin, { stepId: 'totp', mandatory: true, order: 30 }],
      new Date(),
    );
    const manager = await createTestUser(db);
    const token = await mainAuthToken(service, manager, { permissions: ['identity.auth_flow.manage'] });

    let answers!: Promise<{ status: number }[]>;
    // Both changes are judged, then wait to write their audit rows (the table the test holds).
    await db.transaction(async (trx) => {
      await trx.raw('lock table audit_log in share mode');
      const path = '/api/v2/admin/auth-flow';
      const methods = bearerCall(service, 'PUT', `${path}/allowed-methods`, token, { methods: [] });
      const funnel = bearerCall(service, 'PUT', `${path}/funnels/login`, token, { steps: baseLogin });
      answers = Promise.all([methods, funnel]);
      await untilWaitingForLocks(db, 2, answers);
    });
    const statuses = (await answers).map((answer) => answer.status).sort();
    expect(statuses).toEqual([200, 403]);

    const ip = randomIp();
    const started = await client.start('login', { ip });
    const identified = await client.pass(
      started.sessionId,
      'phone-email',
      { identifier: admin.email },
      { ip },
    );
    const passed = await client.pass(identified.sessionId, 'password', { password: admin.password }, { ip });
    expect(passed).toMatchObject({ status: 'in_progress', nextStep: 'totp' });
  });
});
