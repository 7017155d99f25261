import { afterAll, beforeAll, expect, it } from 'vitest';
import { replaceFunnel } from '../../src/identity/auth-flow/funnel-steps.js';
import { saveFieldDefinition } from '../../src/identity/profile-fields/field-definitions.js';
import { uniqueEmail } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { IdentityClient, randomIp } from '../identity/support/identity-client.js';

// A field key is any lower-case word, and `constructor` is one: read from the answers as a plain
// property, a field nobody answered found Object.prototype's member instead, and a required field
// passed with the text of a function.
let service: TestService;
let client: IdentityClient;

beforeAll(async () => {
  service = await startTestService({ env: { TRUST_PROXY: 'true' } });
  client = new IdentityClient(service);
  const { db } = service.service;
  const now = new Date();
  await replaceFunnel(
    db,
    'registration',
    [
      { stepId: 'phone-email', mandatory: true, order: 10 },
      { stepId: 'otp-code', mandatory: true, order: 20 },
      { stepId: 'profile', mandatory: true, order: 30 },
      { stepId: 'password', mandatory: true, order: 40 },
    ],
    now,
  );
  await saveFieldDefinition(db, { key: 'constructor', title: 'Builder', type: 'text', required: true }, now);
});
afterAll(() => service?.close());

it('asks for a required field named like an Object member that was not answered', async () => {
  const ip = randomIp();
  const email = uniqueEmail('constructor');
  const started = await client.start('registration', { ip });
  const identified = await client.pass(started.sessionId, 'phone-email', { identifier: email }, { ip });
  const code = service.service.developmentMessages.latestTo(email)!.code;
  const verified = await client.pass(identified.sessionId, 'otp-code', { code }, { ip });
  expect(verified.nextStep).toBe('profile');

  const refused = await client.step(verified.sessionId, 'profile', {}, { ip });
  expect(refused.status).toBe(400);
  expect(refused.body).toMatchObject({
    error: 'invalid_profile',
    details: { fields: [{ field: 'constructor', message: 'Builder is required.' }] },
  });

  const answered = await client.pass(verified.sessionId, 'profile', { constructor: 'Bob' }, { ip });
  expect(answered.nextStep).toBe('password');
});
