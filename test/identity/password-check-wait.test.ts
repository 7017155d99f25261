import { setTimeout as sleep } from 'node:timers/promises';
import type { Context } from 'koa';
import { describe, expect, it } from 'vitest';
import { defaults } from '../../src/defaults.js';
import { inRequestContext } from '../../src/http/request-context.js';
import { endWaitOf } from '../../src/http/waiting-requests.js';
import {
  argon2Concurrency,
  checkPassword,
  hashPassword,
} from '../../src/identity/passwords/password-hash.js';

/**
 * A request in line for an argon2 slot may give its place up at the bound on requests held at once
 * (src/http/waiting-requests.ts): answered 503, its lockout claims given back uncounted, since it has
 * checked nothing yet. A password not in NFKC form is checked twice (normalized, then as typed):
 * were the second check's wait endable, a wrong first guess would end in an uncounted 503 and a right
 * one in a sign-in, a guess the lockout never counts.
 */
describe('a password check in line for argon2', () => {
  it('can no longer give its place up once one verification of it has run', async () => {
    const cheap = { ...defaults.passwordHashing, memoryCost: 1024, timeCost: 1 };
    const stored = await hashPassword('the right password', cheap);
    const ctx = {
      ip: '203.0.113.77',
      get: () => '',
      req: { socket: {} },
    } as unknown as Context;
    // Full-width letters: NFKC differs from what was typed, so two verifications.
    const typed = 'the ｗｒｏｎｇ password';
    expect(typed.normalize('NFKC')).not.toBe(typed);

    const checked = inRequestContext(ctx, { requestId: 'wait-test', observers: {} }, () =>
      checkPassword(stored, typed, cheap),
    );
    // The first verification has its slot already; these take every slot after it, so the second
    // verification waits in line.
    const blockers = Array.from({ length: argon2Concurrency() + 1 }, () =>
      hashPassword('a blocker', { ...defaults.passwordHashing, timeCost: 12 }),
    );
    let settled = false;
    const outcome = checked.then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    );
    void outcome.finally(() => (settled = true));
    let ended = false;
    while (!settled && !ended) {
      ended = endWaitOf(ctx, new Error('its place went to a newcomer'));
      await sleep(1);
    }
    expect(ended).toBe(false);
    expect(await outcome).toEqual({ value: 'mismatch' });
    await Promise.all(blockers);
  });
});
