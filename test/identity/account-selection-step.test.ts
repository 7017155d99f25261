import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { replaceFunnel } from '../../src/identity/auth-flow/funnel-steps.js';
import { createTestUser } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { IdentityClient, loginFrom, randomIp } from './support/identity-client.js';

let service: TestService;
let client: IdentityClient;
beforeAll(async () => {
  service = await startTestService({ env: { TRUST_PROXY: 'true' } });
  client = new IdentityClient(service);
});
afterAll(() => service?.close());

/** A user who signed in once on a device (its cookie), then the login funnel with account-selection. */
async function deviceWithSavedAccount() {
  const { db } = service.service;
  const user = await createTestUser(db, { givenName: 'Anna', familyName: 'Ivanova' });
  const base = [
    { stepId: 'phone-email', mandatory: true, order: 10 },
    { stepId: 'password', mandatory: true, order: 20 },
  ];
  await replaceFunnel(db, 'login', base, new Date());
  const first = await client.login(user.email!, user.password);
  await replaceFunnel(
    db,
    'login',
    [
      { stepId: 'account-selection', mandatory: true, order: 10 },
      { stepId: 'password', mandatory: true, order: 20 },
    ],
    new Date(),
  );
  return { user, cookie: first.deviceCookie! };
}

describe('the account-selection step', () => {
  it('lists the accounts saved on the device; choosing one leads to its password', async () => {
    const { user, cookie } = await deviceWithSavedAccount();
    const ip = randomIp();
    const started = await client.start('login', { ip, cookie });
    expect(started.nextStep).toBe('account-selection');
    const screen = started.screen[0]!;
    const accounts = screen.data!.accounts as { id: string; email: string; firstName: string }[];
    expect(accounts).toEqual([expect.objectContaining({ email: user.email, firstName: 'Anna' })]);
    expect(screen.fields.map((field) => field.name)).toEqual(['account', 'identifier']);

    const chosen = await client.pass(
      started.sessionId,
      'account-selection',
      { account: accounts[0]!.id },
      { ip, cookie },
    );
    expect(chosen.nextStep).toBe('password');
    expect(chosen.screen[0]!.data).toMatchObject({ identifier: user.email });
    const done = await client.step(chosen.sessionId, 'password', { password: user.password }, { ip, cookie });
    expect(loginFrom(done).userId).toBe(user.id);
  });

  it('takes another account typed in, and shows no list to a device without saved accounts', async () => {
    const { user } = await deviceWithSavedAccount();
    const ip = randomIp();
    const started = await client.start('login', { ip });
    expect(started.screen[0]!.fields.map((field) => field.name)).toEqual(['identifier']);
    expect(started.screen[0]!.data).toEqual({ accounts: [] });
    const typed = await client.pass(
      started.sessionId,
      'account-selection',
      { identifier: user.email },
      { ip },
    );
    expect(typed.nextStep).toBe('password');
  });

  it('refuses an account that is not saved on this device, and a choice of both or neither', async () => {
    const { cookie } = await deviceWithSavedAccount();
    const other = await deviceWithSavedAccount();
    const ip = randomIp();
    const started = await client.start('login', { ip, cookie: other.cookie });
    const othersAccount = (started.screen[0]!.data!.accounts as { id: string }[])[0]!.id;
    const mine = await client.start('login', { ip, cookie });
    const foreign = await client.step(
      mine.sessionId,
      'account-selection',
      { account: othersAccount },
      { ip, cookie },
    );
    expect(foreign.status).toBe(400);
    expect(foreign.body).toMatchObject({ error: 'unknown_account' });
    const neither = await client.step(mine.sessionId, 'account-selection', {}, { ip, cookie });
    expect(neither.status).toBe(400);
  });
});
