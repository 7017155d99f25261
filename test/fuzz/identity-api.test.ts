import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestUser, uniqueEmail } from '../support/fixtures.js';
import { mainAuthToken } from '../support/sign-in.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { IdentityClient, apiPrefix, randomIp } from '../identity/support/identity-client.js';
import {
  expectApiError,
  expectNoServerFault,
  fuzzRuns,
  fuzzTimeoutMs,
  refusalCounters,
  rowCounts,
  send,
  type FuzzResponse,
} from './support/fuzz-http.js';
import { anyJson, forwardedIp, hostileText, objectOf, rawJsonBody } from './support/generators.js';

// Generated inputs through the identity API's auth flow, password and verification routes: never a 500
// or a stack, `{ error, message, details? }` for every refusal, nothing written by a refused request.
let service: TestService;
let client: IdentityClient;
let user: Awaited<ReturnType<typeof createTestUser>>;
let userToken: string;

beforeAll(async () => {
  service = await startTestService({ env: { TRUST_PROXY: 'true', REAUTH_WINDOW_MINUTES: '60' } });
  client = new IdentityClient(service);
  user = await createTestUser(service.service.db, { phone: '+15550001111', phoneVerified: true });
  userToken = await mainAuthToken(service, user);
}, 120_000); // a service and its fixtures: slow on a loaded machine
afterAll(() => service?.close());

async function post(path: string, body: string, headers: Record<string, string> = {}): Promise<FuzzResponse> {
  return send(service.issuer, {
    method: 'POST',
    path: `${apiPrefix}${path}`,
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });
}

/** Sends; a refused request must leave every table's row count as it was. */
async function refusedWritesNothing(
  request: () => Promise<FuzzResponse>,
  what: string,
): Promise<FuzzResponse> {
  const before = await rowCounts(service.service.db, refusalCounters);
  const response = await request();
  expectNoServerFault(response, what);
  if (response.status >= 400) {
    expectApiError(response, what);
    expect(await rowCounts(service.service.db, refusalCounters), what).toEqual(before);
  }
  return response;
}

/**
 * Flow sessions standing at each step, for the fuzzer to submit to. A refused input leaves the session
 * where it was; anything else (accepted, expired, too many attempts) makes the next input start over.
 */
type Stage =
  | 'login/phone-email'
  | 'login/password'
  | 'registration/phone-email'
  | 'registration/otp-code'
  | 'registration/password';
const stages: Stage[] = [
  'login/phone-email',
  'login/password',
  'registration/phone-email',
  'registration/otp-code',
  'registration/password',
];
const standing = new Map<Stage, { sessionId: string; ip: string }>();

async function sessionAt(stage: Stage): Promise<{ sessionId: string; ip: string }> {
  const ready = standing.get(stage);
  if (ready) return ready;
  const ip = randomIp();
  const [flow, step] = stage.split('/') as ['login' | 'registration', string];
  let { sessionId } = await client.start(flow, { ip });
  if (step !== 'phone-email') {
    const identifier = flow === 'login' ? user.email! : uniqueEmail('fuzz');
    sessionId = (await client.pass(sessionId, 'phone-email', { identifier }, { ip })).sessionId;
    if (step === 'password' && flow === 'registration') {
      const code = service.service.developmentMessages.latestTo(identifier)!.code!;
      sessionId = (await client.pass(sessionId, 'otp-code', { code }, { ip })).sessionId;
    }
  }
  standing.set(stage, { sessionId, ip });
  return { sessionId, ip };
}

const stepIds = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('phone-email', 'password', 'otp-code') },
  { weight: 2, arbitrary: fc.constantFrom('totp', 'mfa-setup', 'consent') },
  { weight: 1, arbitrary: hostileText },
);

const stepInput = objectOf({
  identifier: fc.constantFrom('someone@example.com', '+15550001111', 'not an identifier', '', 'a@b'),
  password: fc.constantFrom('correct horse battery staple', 'password', '', 'x'.repeat(2000)),
  code: fc.constantFrom('000000', 'ABC123', '', ' 123456 ', '1'.repeat(30)),
  transport: fc.constantFrom('email', 'sms', 'carrier-pigeon'),
  resend: fc.boolean(),
  skip: fc.constantFrom(true, 'on', 'true', false, 1),
  accept: fc.constantFrom(true, 'on', false),
});

describe('fuzzing the identity API', () => {
  it(
    `POST /auth/flow/start: ${fuzzRuns} generated bodies`,
    async () => {
      const body = rawJsonBody(objectOf({ flow: fc.constantFrom('login', 'registration', 'sign-up', '') }));
      await fc.assert(
        fc.asyncProperty(body, forwardedIp, async (raw, ip) => {
          const what = `POST /auth/flow/start ${raw}`;
          const response = await refusedWritesNothing(
            () => post('/auth/flow/start', raw, { 'x-forwarded-for': ip }),
            what,
          );
          if (response.status === 200) expect(JSON.parse(response.text).status, what).toBe('in_progress');
        }),
        { numRuns: fuzzRuns },
      );
    },
    fuzzTimeoutMs,
  );

  it(
    `POST /auth/flow/step at every reachable step: ${fuzzRuns} generated submissions`,
    async () => {
      const submission = fc.record({
        stage: fc.constantFrom(...stages),
        session: fc.oneof(
          { weight: 8, arbitrary: fc.constant('live') },
          { weight: 1, arbitrary: hostileText },
          { weight: 1, arbitrary: anyJson },
        ),
        step: stepIds,
        input: stepInput,
        shape: fc.constantFrom('json', 'json', 'json', 'json', 'raw'),
        raw: fc.string({ maxLength: 40 }),
      });
      await fc.assert(
        fc.asyncProperty(submission, async ({ stage, session, step, input, shape, raw }) => {
          const live = await sessionAt(stage);
          const body =
            shape === 'raw'
              ? raw
              : JSON.stringify({ sessionId: session === 'live' ? live.sessionId : session, step, input });
          const what = `POST /auth/flow/step at ${stage}: ${body}`;
          const response = await refusedWritesNothing(
            () => post('/auth/flow/step', body, { 'x-forwarded-for': live.ip }),
            what,
          );
          if (response.status !== 400) standing.delete(stage);
          if (response.status === 200)
            expect(JSON.parse(response.text).sessionId, what).toEqual(expect.any(String));
        }),
        { numRuns: fuzzRuns },
      );
    },
    fuzzTimeoutMs,
  );

  it(
    `password routes (forgot, verify-code, reset, change): ${fuzzRuns} generated requests`,
    async () => {
      const fields = {
        identifier: fc.constantFrom(user.email!, '+15550001111', 'nobody@example.com', 'not an identifier'),
        code: fc.constantFrom('000000', 'ABC123', '', '1'.repeat(30)),
        transport: fc.constantFrom('email', 'sms', 'carrier-pigeon'),
        password: fc.constantFrom('a fine long passphrase 42', 'password', '', 'x'.repeat(2000)),
        passwordConfirmation: fc.constantFrom('a fine long passphrase 42', 'different'),
        currentPassword: fc.constantFrom(user.password, 'wrong', ''),
        newPassword: fc.constantFrom('a fine long passphrase 42', 'short'),
        newPasswordConfirmation: fc.constantFrom('a fine long passphrase 42', 'different'),
      };
      const request = fc.record({
        route: fc.constantFrom('forgot', 'verify-code', 'reset', 'change'),
        body: rawJsonBody(objectOf(fields)),
        token: fc.constantFrom(userToken, userToken, 'garbage', ''),
        ip: forwardedIp,
      });
      await fc.assert(
        fc.asyncProperty(request, async ({ route, body, token, ip }) => {
          const what = `POST /auth/password/${route} ${body}`;
          const response = await refusedWritesNothing(
            () =>
              post(`/auth/password/${route}`, body, {
                'x-forwarded-for': ip,
                ...(route === 'change' ? { authorization: `Bearer ${token}` } : {}),
              }),
            what,
          );
          // The password never changes here: no generated input knows a code, and `change` needs the
          // current password, which only the one plausible value has (then a weak or mismatched new one
          // is refused, or the change succeeds and the next inputs use the old one in vain).
          expect([200, 202, 204, 400, 401, 403, 404, 409, 410, 413, 415, 422, 423, 429], what).toContain(
            response.status,
          );
        }),
        { numRuns: fuzzRuns },
      );
    },
    fuzzTimeoutMs,
  );

  it(
    `verification routes (send, confirm): ${fuzzRuns} generated requests`,
    async () => {
      const request = fc.record({
        route: fc.constantFrom('send', 'confirm'),
        body: rawJsonBody(
          objectOf({
            identifier: fc.constantFrom(
              user.email!,
              '+15550001111',
              uniqueEmail('other'),
              'not an identifier',
            ),
            code: fc.constantFrom('000000', 'ABC123', '', '1'.repeat(30)),
            transport: fc.constantFrom('email', 'sms', 'carrier-pigeon'),
          }),
        ),
        token: fc.constantFrom(userToken, userToken, userToken, 'garbage'),
        ip: forwardedIp,
      });
      await fc.assert(
        fc.asyncProperty(request, async ({ route, body, token, ip }) => {
          const what = `POST /auth/verify/${route} ${body}`;
          await refusedWritesNothing(
            () =>
              post(`/auth/verify/${route}`, body, {
                'x-forwarded-for': ip,
                authorization: `Bearer ${token}`,
              }),
            what,
          );
        }),
        { numRuns: fuzzRuns },
      );
    },
    fuzzTimeoutMs,
  );
});
