import { webcrypto } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  argon2Concurrency,
  hashPassword,
  verifyPassword,
} from '../../src/identity/passwords/password-hash.js';

describe('argon2id computations at once', () => {
  it('one per core, always leaving a thread of libuv’s pool free', () => {
    expect(argon2Concurrency(2, 4)).toBe(2);
    expect(argon2Concurrency(16, 4)).toBe(3);
    expect(argon2Concurrency(16, 17)).toBe(16);
    expect(argon2Concurrency(1, 4)).toBe(1);
    expect(argon2Concurrency(2, 1)).toBe(1);
  });

  it('a burst of password checks does not hold up an RSA signature', async () => {
    // Production parameters (the default): each check keeps a pool thread busy for tens of ms.
    const hash = await hashPassword('a long enough secret');
    const started = performance.now();
    await verifyPassword(hash, 'not the secret');
    const oneCheck = performance.now() - started;

    const { privateKey } = await webcrypto.subtle.generateKey(
      {
        name: 'RSASSA-PKCS1-v1_5',
        modulusLength: 2048,
        publicExponent: new Uint8Array([1, 0, 1]),
        hash: 'SHA-256',
      },
      false,
      ['sign'],
    );
    // More checks than the pool has threads, all at once: as a burst of logins asks for them.
    const burstStarted = performance.now();
    let firstCheckDone = Infinity;
    const burst = Array.from({ length: 12 }, () =>
      verifyPassword(hash, 'not the secret').then((matched) => {
        firstCheckDone = Math.min(firstCheckDone, performance.now());
        return matched;
      }),
    );
    // Until the checks are running: they reach the pool a few turns after they are asked for.
    await new Promise((resolve) => setTimeout(resolve, Math.min(5, oneCheck / 4)));
    const signingStarted = performance.now();
    await webcrypto.subtle.sign('RSASSA-PKCS1-v1_5', privateKey, new TextEncoder().encode('a token'));
    const signing = performance.now() - signingStarted;
    expect(await Promise.all(burst)).toEqual(Array.from({ length: 12 }, () => false));

    // With every pool thread hashing, the signature would wait behind the checks queued before it (three
    // checks' time for twelve on four threads). It is compared with the burst's first check, which ran
    // under the same load: a check measured alone before may have had the cores to itself.
    expect(signing).toBeLessThan(firstCheckDone - burstStarted);
  });
});
