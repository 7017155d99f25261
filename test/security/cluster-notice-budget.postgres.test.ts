import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestUser } from '../support/fixtures.js';
import type { PinnedWorker } from '../faults/support/pinned-worker.js';
import { startTwoPinnedWorkers } from '../faults/support/pinned-worker.js';
import type { ServiceProcess } from '../faults/support/service-process.js';

// npm start with HTTP_WORKERS=2: the hourly budget of security notices to one user (five of a kind)
// was counted in each worker's memory, so whoever signs in to an account in a loop (each sign-in
// without the device cookie is a new-device notice through the shared mail transport) got five per
// worker, by opening new connections until the other worker took one. The budget is one for the cluster.
let cluster: Awaited<ReturnType<typeof startTwoPinnedWorkers>>;
let service: ServiceProcess;
let a: PinnedWorker;
let b: PinnedWorker;

beforeAll(async () => {
  cluster = await startTwoPinnedWorkers('info');
  ({ service, a, b } = cluster);
}, 90_000);
afterAll(() => cluster?.close());

const jsonHeaders = { 'content-type': 'application/json' };

/** A sign-in without the device cookie: a new-device notice to the user's address. */
async function signIn(on: PinnedWorker, user: { email?: string | null; password: string }) {
  const step = async (path: string, body: unknown) => {
    const answer = await on.request('POST', `/api/v2/identity${path}`, jsonHeaders, JSON.stringify(body));
    expect(answer.status, answer.body).toBe(200);
    return JSON.parse(answer.body) as { sessionId: string };
  };
  const started = await step('/auth/flow/start', { flow: 'login' });
  const identified = await step('/auth/flow/step', {
    sessionId: started.sessionId,
    step: 'phone-email',
    input: { identifier: user.email },
  });
  await step('/auth/flow/step', {
    sessionId: identified.sessionId,
    step: 'password',
    input: { password: user.password },
  });
}

const noticesTo = (email: string) =>
  service.output.split('\n').filter((line) => line.includes('development transport') && line.includes(email))
    .length;

describe('security notices in a cluster', () => {
  it('one user gets at most five of a kind an hour, whichever worker takes the sign-ins', async () => {
    const user = await createTestUser(cluster.database.db);
    for (let round = 0; round < 5; round++) {
      await signIn(a, user);
      await signIn(b, user);
    }
    // Sent in the background after each answer: give the last ones time to be logged.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(noticesTo(user.email!)).toBe(5);
  }, 60_000);
});
