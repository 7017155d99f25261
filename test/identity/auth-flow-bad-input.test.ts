import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestUser } from '../support/fixtures.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { IdentityClient, MovableClock, randomIp } from './support/identity-client.js';

let service: TestService;
let client: IdentityClient;
const clock = new MovableClock();

beforeAll(async () => {
  service = await startTestService({ env: { TRUST_PROXY: 'true' }, clock });
  client = new IdentityClient(service);
});
afterAll(() => service?.close());

describe('bad input to /auth/flow', () => {
  it('refuses malformed bodies with the JSON error body, never a 500', async () => {
    const ip = randomIp();
    const malformed = await client.post('/auth/flow/start', undefined, { ip, rawBody: '{"flow": ' });
    expect(malformed.status).toBe(400);
    expect(malformed.body).toMatchObject({ error: 'invalid_json' });

    const unknownFlow = await client.post('/auth/flow/start', { flow: 'sign-up' }, { ip });
    expect(unknownFlow.status).toBe(400);
    expect(unknownFlow.body).toMatchObject({
      error: 'invalid_request',
      details: [expect.objectContaining({ path: 'flow' })],
    });

    const noSession = await client.post('/auth/flow/step', { step: 'phone-email', input: {} }, { ip });
    expect(noSession.status).toBe(400);
    expect(noSession.body.error).toBe('invalid_request');

    const started = await client.start('login', { ip });
    const wrongType = await client.step(started.sessionId, 'phone-email', { identifier: 42 }, { ip });
    expect(wrongType.status).toBe(400);
    expect(wrongType.body).toMatchObject({
      error: 'invalid_request',
      details: [expect.objectContaining({ path: 'identifier' })],
    });

    const notAnIdentifier = await client.step(
      started.sessionId,
      'phone-email',
      { identifier: 'hello' },
      { ip },
    );
    expect(notAnIdentifier.status).toBe(400);
    expect(notAnIdentifier.body.error).toBe('invalid_identifier');

    const arrayBody = await client.post('/auth/flow/step', [1, 2], { ip });
    expect(arrayBody.status).toBe(400);
  });

  it('refuses an unknown flow session', async () => {
    const response = await client.step(
      'not-a-session',
      'phone-email',
      { identifier: 'a@example.com' },
      { ip: randomIp() },
    );
    expect(response.status).toBe(410);
    expect(response.body).toMatchObject({ error: 'flow_session_invalid' });
  });

  it('refuses a flow session after its 5 minutes', async () => {
    const ip = randomIp();
    const started = await client.start('login', { ip });
    clock.advance(5 * 60 * 1000 + 1000);
    const response = await client.step(
      started.sessionId,
      'phone-email',
      { identifier: 'a@example.com' },
      { ip },
    );
    expect(response.status).toBe(410);
    expect(response.body.error).toBe('flow_session_invalid');
  });

  it('refuses a step out of order and says which step is expected', async () => {
    const ip = randomIp();
    const started = await client.start('login', { ip });
    const response = await client.step(started.sessionId, 'password', { password: 'whatever' }, { ip });
    expect(response.status).toBe(409);
    expect(response.body).toMatchObject({
      error: 'step_out_of_order',
      details: { expectedStep: 'phone-email', expectedSteps: ['phone-email'] },
    });
    const unknownStep = await client.step(started.sessionId, 'no-such-step', {}, { ip });
    expect(unknownStep.status).toBe(409);
    const asGroup = await client.post(
      '/auth/flow/step',
      {
        sessionId: started.sessionId,
        steps: { 'phone-email': { identifier: 'a@example.com' }, password: {} },
      },
      { ip },
    );
    expect(asGroup.status).toBe(409);
    // The flow is still usable after the refusals.
    const identified = await client.step(
      started.sessionId,
      'phone-email',
      { identifier: 'a@example.com' },
      { ip },
    );
    expect(identified.status).toBe(200);
  });

  it('refuses a replayed step: every accepted step replaces the session id', async () => {
    const user = await createTestUser(service.service.db);
    const ip = randomIp();
    const started = await client.start('login', { ip });
    const identified = await client.pass(
      started.sessionId,
      'phone-email',
      { identifier: user.email },
      { ip },
    );
    const replayed = await client.step(started.sessionId, 'phone-email', { identifier: user.email }, { ip });
    expect(replayed.status).toBe(410);

    const done = await client.step(identified.sessionId, 'password', { password: user.password }, { ip });
    expect(done.body.status).toBe('completed');
    const replayedLast = await client.step(
      identified.sessionId,
      'password',
      { password: user.password },
      { ip },
    );
    expect(replayedLast.status).toBe(410);
    const sessions = await service.service.db('sessions').where({ user_id: user.id });
    expect(sessions).toHaveLength(1);
  });

  it('completes a flow once when the last step is submitted twice in parallel', async () => {
    const user = await createTestUser(service.service.db);
    const ip = randomIp();
    const started = await client.start('login', { ip });
    const identified = await client.pass(
      started.sessionId,
      'phone-email',
      { identifier: user.email },
      { ip },
    );
    const results = await Promise.all(
      Array.from({ length: 5 }, () =>
        client.step(identified.sessionId, 'password', { password: user.password }, { ip }),
      ),
    );
    expect(results.filter((result) => result.status === 200)).toHaveLength(1);
    expect(results.filter((result) => result.status === 410)).toHaveLength(4);
    expect(await service.service.db('sessions').where({ user_id: user.id })).toHaveLength(1);
  });
});
