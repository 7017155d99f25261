import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isForSiblings } from '../../src/cluster/cluster-messages.js';

/**
 * Two processes standing in for the workers of a cluster (HTTP_WORKERS > 1), this test for the primary:
 * what one worker tells its own caches (a session ended, grants revoked, a user disabled, a client
 * changed) reaches the other's at once (src/cluster/worker-notices.ts), and only once: the sibling does
 * not send it back. Without it, a token refused after a logout on one worker was accepted for up to 5 s
 * on the other.
 */
interface Heard {
  kind: 'test:heard';
  topic: string;
  payload: unknown;
}

const workerScript = fileURLToPath(new URL('./support/notice-worker.ts', import.meta.url));
const workers: ChildProcess[] = [];
const heard: Heard[][] = [[], []];

beforeAll(async () => {
  for (const index of [0, 1]) {
    const worker = fork(workerScript, { execArgv: ['--import', 'tsx'], stdio: 'inherit' });
    workers.push(worker);
    await new Promise<void>((resolve, reject) => {
      worker.on('message', (message: { kind?: string }) => {
        if (message.kind === 'test:ready') resolve();
        if (message.kind === 'test:heard') heard[index]!.push(message as Heard);
        // The primary's part (src/cluster/cluster-primary.ts): on to every other worker.
        if (isForSiblings(message)) for (const other of workers) if (other !== worker) other.send(message);
      });
      worker.once('exit', (code) => reject(new Error(`the worker exited (${code})`)));
    });
  }
}, 60_000);
afterAll(() => {
  for (const worker of workers) worker.kill();
});

/** Worker `index` announces `payload`; answers what each worker heard of it. */
async function announce(index: number, topic: string, payload: unknown) {
  heard[0] = [];
  heard[1] = [];
  workers[index]!.send({ kind: 'test:announce', topic, payload });
  await expect.poll(() => heard[1 - index]!.length, { timeout: 5_000 }).toBeGreaterThan(0);
  // Long enough for an echo to come back, were the sibling to send it on.
  await new Promise((resolve) => setTimeout(resolve, 100));
  return heard.map((messages) =>
    messages.map((message) => ({ topic: message.topic, payload: message.payload })),
  );
}

describe('notices between the workers of a cluster', () => {
  it.each([
    ['sessions-ended', ['a-session', 'another']],
    ['grants-revoked', [{ grantId: 'a-grant', expiresAt: '2026-11-28T04:00:00.000Z' }]],
    ['user-status', { userId: 'a-user', status: 'disabled' }],
    ['client-changed', 'a-client'],
  ])('%s: told on one worker, heard once on each', async (topic, payload) => {
    const [first, second] = await announce(0, topic, payload);
    expect(first).toEqual([{ topic, payload }]);
    expect(second).toEqual([{ topic, payload }]);
    // And the other way round.
    const [back, forth] = await announce(1, topic, payload);
    expect(back).toEqual([{ topic, payload }]);
    expect(forth).toEqual([{ topic, payload }]);
  });
});
