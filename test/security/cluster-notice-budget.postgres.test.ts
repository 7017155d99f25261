import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestUser } from '../support/fixtures.js';
import type { PinnedWorker } from '../faults/support/pinned-worker.js';
import { signInOn, startTwoPinnedWorkers } from '../faults/support/pinned-worker.js';
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

const noticesTo = (email: string) =>
  service.output.split('\n').filter((line) => line.includes('development transport') && line.includes(email))
    .length;

describe('security notices in a cluster', () => {
  it('one user gets at most five of a kind an hour, whichever worker takes the sign-ins', async () => {
    const user = await createTestUser(cluster.database.db);
    for (let round = 0; round < 5; round++) {
      await signInOn(a, user);
      await signInOn(b, user);
    }
    // Sent in the background after each answer: give the last ones time to be logged.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(noticesTo(user.email!)).toBe(5);
  }, 60_000);
});
