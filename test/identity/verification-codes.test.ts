import crypto from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { systemClock, type Clock } from '../../src/clock.js';
import type { DatabaseHandle } from '../../src/db/database.js';
import { ApiError } from '../../src/http/api-error.js';
import { RateLimits } from '../../src/http/rate-limit.js';
import { addressBlock } from '../../src/http/request-info.js';
import { DevelopmentTransport } from '../../src/identity/transports/development-transport.js';
import { TransportRegistry } from '../../src/identity/transports/transport-registry.js';
import type { Identifier } from '../../src/identity/users/contact.js';
import {
  checkVerificationCode,
  confirmVerificationCode,
  issueVerificationCode,
  sendVerificationCode,
  type VerificationDeps,
} from '../../src/identity/verification/verification-codes.js';
import { createTestDatabase } from '../support/database.js';
import { createTestUser, uniqueEmail, uniquePhone } from '../support/fixtures.js';
import { ManualClock } from '../support/manual-clock.js';

let database: DatabaseHandle;
let outbox: DevelopmentTransport;
beforeAll(async () => {
  database = await createTestDatabase();
});
const limiters: RateLimits[] = [];
afterAll(async () => {
  await Promise.all(limiters.map((limiter) => limiter.close()));
  await database?.close();
});
afterEach(() => {
  vi.useRealTimers();
});

function dependencies(clock: Clock = systemClock): VerificationDeps {
  outbox = new DevelopmentTransport();
  const rateLimits = new RateLimits(database.db);
  limiters.push(rateLimits);
  return { db: database.db, clock, transports: new TransportRegistry().register(outbox), rateLimits };
}

const email = (): Identifier => ({ kind: 'email', value: uniqueEmail('code') });
/** A requester's IP and the address block its limits count, as requestInfo() answers them. */
const uniqueAddress = () => {
  const ip = `10.${crypto.randomInt(256)}.${crypto.randomInt(256)}.${crypto.randomInt(1, 255)}`;
  return { ip, addressBlock: addressBlock(ip) };
};

async function codeRow(identifier: string) {
  return database.db('verification_codes').where({ identifier }).orderBy('created_at', 'desc').first();
}

async function errorOf(promise: Promise<unknown>): Promise<ApiError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  if (!(error instanceof ApiError)) throw new Error(`expected an ApiError, got ${String(error)}`);
  return error;
}

describe('sending a verification code', () => {
  it('sends a 6-digit code from the CSPRNG through the transport and stores only its hash', async () => {
    const clock = new ManualClock();
    const deps = dependencies(clock);
    const to = email();
    const sent = await sendVerificationCode(deps, {
      identifier: to,
      purpose: 'contact_verify',
      ...uniqueAddress(),
    });

    expect(sent.resendAfterSeconds).toBe(60);
    expect(sent.expiresAt.getTime() - clock.now().getTime()).toBe(10 * 60 * 1000);
    const message = outbox.latestTo(to.value)!;
    expect(message.channel).toBe('email');
    expect(message.code).toMatch(/^\d{6}$/);
    expect(message.text).toContain(message.code);
    const row = await codeRow(to.value);
    expect(row).toMatchObject({ purpose: 'contact_verify', status: 'pending', attempts: 0, max_attempts: 5 });
    expect(row.code_hash).not.toContain(message.code);
  });

  it('draws a different random code each time', async () => {
    const deps = dependencies();
    const codes = await Promise.all(
      Array.from({ length: 20 }, () =>
        issueVerificationCode(deps, { identifier: email(), purpose: 'login' }),
      ),
    );
    expect(new Set(codes.map((issued) => issued.code)).size).toBeGreaterThan(15);
    for (const issued of codes) expect(issued.code).toMatch(/^\d{6}$/);
  });

  it('puts the code into the link it sends, as the `code` query parameter', async () => {
    const deps = dependencies();
    const to = email();
    await sendVerificationCode(deps, {
      identifier: to,
      purpose: 'reset_password',
      ...uniqueAddress(),
      link: `https://id.example.com/en/reset-password?identifier=${encodeURIComponent(to.value)}`,
    });
    const message = outbox.latestTo(to.value)!;
    const link = new URL(message.link!);
    expect(link.pathname).toBe('/en/reset-password');
    expect(link.searchParams.get('identifier')).toBe(to.value);
    expect(link.searchParams.get('code')).toBe(message.code);
    expect(message.text).toContain(message.link);
  });

  it('sends to phones through an SMS transport, and says so when there is none', async () => {
    const deps = dependencies();
    const phone: Identifier = { kind: 'phone', value: uniquePhone() };
    await sendVerificationCode(deps, { identifier: phone, purpose: 'login', ...uniqueAddress() });
    expect(outbox.latestTo(phone.value)?.channel).toBe('sms');

    const emailOnly = {
      ...deps,
      transports: new TransportRegistry().register(new DevelopmentTransport(['email'])),
    };
    const error = await errorOf(
      sendVerificationCode(emailOnly, {
        identifier: { kind: 'phone', value: uniquePhone() },
        purpose: 'login',
        ...uniqueAddress(),
      }),
    );
    expect(error).toMatchObject({ status: 400, code: 'channel_not_supported' });
  });

  it('leaves no usable code when the delivery fails', async () => {
    const deps = dependencies();
    deps.transports = new TransportRegistry().register({
      name: 'down',
      label: 'Down',
      channels: ['email'],
      async send() {
        throw new Error('smtp down');
      },
    });
    const to = email();
    const error = await errorOf(
      sendVerificationCode(deps, { identifier: to, purpose: 'login', ...uniqueAddress() }),
    );
    expect(error).toMatchObject({ status: 502, code: 'delivery_failed' });
    expect((await codeRow(to.value)).status).toBe('expired');
  });

  it('with delivery `none` stores a decoy code that behaves like a real one but sends nothing', async () => {
    const deps = dependencies();
    const to = email();
    await sendVerificationCode(deps, {
      identifier: to,
      purpose: 'reset_password',
      ...uniqueAddress(),
      delivery: 'none',
    });
    expect(outbox.latestTo(to.value)).toBeUndefined();
    const error = await errorOf(
      checkVerificationCode(deps, { identifier: to.value, purpose: 'reset_password', code: '000000' }),
    );
    // (1 chance in a million that 000000 is the decoy itself.)
    expect(error).toMatchObject({ status: 400, code: 'invalid_code', details: { attemptsLeft: 4 } });
  });
});

describe('confirming a code', () => {
  it('accepts the right code once: pending → used', async () => {
    const deps = dependencies();
    const user = await createTestUser(deps.db);
    const to = email();
    await sendVerificationCode(deps, {
      identifier: to,
      purpose: 'contact_verify',
      ...uniqueAddress(),
      userId: user.id,
    });
    const code = outbox.latestTo(to.value)!.code!;

    const confirmed = await confirmVerificationCode(deps, {
      identifier: to.value,
      purpose: 'contact_verify',
      code,
    });
    expect(confirmed.userId).toBe(user.id);
    expect(await codeRow(to.value)).toMatchObject({ status: 'used', attempts: 0 });
    const replay = await errorOf(
      confirmVerificationCode(deps, { identifier: to.value, purpose: 'contact_verify', code }),
    );
    expect(replay).toMatchObject({ status: 410, code: 'code_expired' });
  });

  it('counts wrong codes; the 5th makes the code invalid, even for the right code afterwards', async () => {
    const deps = dependencies();
    const to = email();
    await sendVerificationCode(deps, { identifier: to, purpose: 'login', ...uniqueAddress() });
    const code = outbox.latestTo(to.value)!.code!;
    const wrong = code === '000000' ? '111111' : '000000';
    const attempt = (value: string) =>
      confirmVerificationCode(deps, { identifier: to.value, purpose: 'login', code: value });

    for (const attemptsLeft of [4, 3, 2, 1]) {
      expect(await errorOf(attempt(wrong))).toMatchObject({
        status: 400,
        code: 'invalid_code',
        details: { attemptsLeft },
      });
    }
    expect(await errorOf(attempt(wrong))).toMatchObject({ status: 410, code: 'code_expired' });
    expect(await codeRow(to.value)).toMatchObject({ status: 'expired', attempts: 5 });
    expect(await errorOf(attempt(code))).toMatchObject({ status: 410, code: 'code_expired' });
  });

  it('expires after 10 minutes (pending → expired)', async () => {
    const clock = new ManualClock();
    const deps = dependencies(clock);
    const to = email();
    await sendVerificationCode(deps, { identifier: to, purpose: 'contact_verify', ...uniqueAddress() });
    const code = outbox.latestTo(to.value)!.code!;

    clock.advanceSeconds(9 * 60 + 59);
    await checkVerificationCode(deps, { identifier: to.value, purpose: 'contact_verify', code });
    clock.advanceSeconds(2);
    const error = await errorOf(
      confirmVerificationCode(deps, { identifier: to.value, purpose: 'contact_verify', code }),
    );
    expect(error).toMatchObject({ status: 410, code: 'code_expired' });
    expect((await codeRow(to.value)).status).toBe('expired');
  });

  it('gives an inbound-SSO one-time code 60 seconds', async () => {
    const clock = new ManualClock();
    const deps = dependencies(clock);
    const to = email();
    const issued = await issueVerificationCode(deps, { identifier: to, purpose: 'sso_otc' });
    expect(issued.expiresAt.getTime() - clock.now().getTime()).toBe(60_000);
    clock.advanceSeconds(61);
    const error = await errorOf(
      confirmVerificationCode(deps, { identifier: to.value, purpose: 'sso_otc', code: issued.code }),
    );
    expect(error.code).toBe('code_expired');
  });

  it('only the latest code works: a new code replaces the pending one', async () => {
    const deps = dependencies();
    const to = email();
    const first = await issueVerificationCode(deps, { identifier: to, purpose: 'login' });
    const second = await issueVerificationCode(deps, { identifier: to, purpose: 'login' });
    if (first.code !== second.code) {
      expect(
        (
          await errorOf(
            confirmVerificationCode(deps, { identifier: to.value, purpose: 'login', code: first.code }),
          )
        ).status,
      ).toBe(400);
    }
    await confirmVerificationCode(deps, { identifier: to.value, purpose: 'login', code: second.code });
  });

  it('keeps purposes apart, and a code issued for one user can not be confirmed by another', async () => {
    const deps = dependencies();
    const [owner, other] = await Promise.all([createTestUser(deps.db), createTestUser(deps.db)]);
    const to = email();
    const issued = await issueVerificationCode(deps, {
      identifier: to,
      purpose: 'contact_verify',
      userId: owner.id,
    });
    expect(
      (
        await errorOf(
          confirmVerificationCode(deps, { identifier: to.value, purpose: 'login', code: issued.code }),
        )
      ).code,
    ).toBe('code_expired');
    expect(
      (
        await errorOf(
          confirmVerificationCode(deps, {
            identifier: to.value,
            purpose: 'contact_verify',
            code: issued.code,
            userId: other.id,
          }),
        )
      ).code,
    ).toBe('code_expired');
    await confirmVerificationCode(deps, {
      identifier: to.value,
      purpose: 'contact_verify',
      code: issued.code,
      userId: owner.id,
    });
  });

  it('checking does not use the code up; redeeming does', async () => {
    const deps = dependencies();
    const to = email();
    const issued = await issueVerificationCode(deps, { identifier: to, purpose: 'reset_password' });
    const input = { identifier: to.value, purpose: 'reset_password' as const, code: issued.code };
    await checkVerificationCode(deps, input);
    await checkVerificationCode(deps, input);
    await confirmVerificationCode(deps, input);
    expect((await errorOf(checkVerificationCode(deps, input))).code).toBe('code_expired');
  });

  it('counts a wrong code even when the caller rolls its transaction back', async () => {
    const deps = dependencies();
    const to = email();
    const issued = await issueVerificationCode(deps, { identifier: to, purpose: 'contact_verify' });
    const wrong = issued.code === '000000' ? '111111' : '000000';
    await expect(
      deps.db.transaction((trx) =>
        confirmVerificationCode(deps, { identifier: to.value, purpose: 'contact_verify', code: wrong }, trx),
      ),
    ).rejects.toMatchObject({ code: 'invalid_code' });
    await vi.waitFor(async () => expect((await codeRow(to.value)).attempts).toBe(1));
    // A right code redeemed in a transaction that rolls back stays usable.
    await expect(
      deps.db.transaction(async (trx) => {
        await confirmVerificationCode(
          deps,
          { identifier: to.value, purpose: 'contact_verify', code: issued.code },
          trx,
        );
        throw new Error('the rest of the work failed');
      }),
    ).rejects.toThrow('the rest of the work failed');
    expect((await codeRow(to.value)).status).toBe('pending');
  });
});

describe('code attempts under parallel requests', () => {
  it('30 parallel wrong guesses get no more than 5 judged', async () => {
    const deps = dependencies();
    const to = email();
    const issued = await issueVerificationCode(deps, { identifier: to, purpose: 'login' });
    const guesses = Array.from({ length: 30 }, (_, index) => String(index).padStart(6, '9')).filter(
      (guess) => guess !== issued.code,
    );
    const results = await Promise.allSettled(
      guesses.map((code) => confirmVerificationCode(deps, { identifier: to.value, purpose: 'login', code })),
    );
    const errors = results.map((result) => (result as PromiseRejectedResult).reason as ApiError);
    expect(errors.filter((error) => error.code === 'invalid_code')).toHaveLength(4);
    expect(errors.filter((error) => error.code === 'code_expired')).toHaveLength(guesses.length - 4);
    expect(await codeRow(to.value)).toMatchObject({ attempts: 5, status: 'expired' });
  });

  it('the right code presented 20 times in parallel is accepted exactly once', async () => {
    const deps = dependencies();
    const to = email();
    const issued = await issueVerificationCode(deps, { identifier: to, purpose: 'login' });
    const results = await Promise.allSettled(
      Array.from({ length: 20 }, () =>
        confirmVerificationCode(deps, { identifier: to.value, purpose: 'login', code: issued.code }),
      ),
    );
    expect(results.filter((result) => result.status === 'fulfilled')).toHaveLength(1);
  });
});

describe('code sending limits', () => {
  it('waits 60 seconds between resends to one identifier', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const deps = dependencies();
    const to = email();
    const from = uniqueAddress();
    await sendVerificationCode(deps, { identifier: to, purpose: 'login', ...from });
    vi.setSystemTime(Date.now() + 30_000);
    const error = await errorOf(sendVerificationCode(deps, { identifier: to, purpose: 'login', ...from }));
    expect(error.status).toBe(429);
    expect(Number(error.headers['Retry-After'])).toBeGreaterThan(0);
    expect(Number(error.headers['Retry-After'])).toBeLessThanOrEqual(30);
    expect(error.message).toMatch(/another one in \d+ seconds/);
    vi.setSystemTime(Date.now() + 31_000);
    await sendVerificationCode(deps, { identifier: to, purpose: 'login', ...from });
  });

  it('sends at most 3 codes to one identifier in 10 minutes, whatever the IP', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const deps = dependencies();
    const to = email();
    for (let index = 0; index < 3; index++) {
      await sendVerificationCode(deps, { identifier: to, purpose: 'login', ...uniqueAddress() });
      vi.setSystemTime(Date.now() + 61_000);
    }
    const error = await errorOf(
      sendVerificationCode(deps, { identifier: to, purpose: 'login', ...uniqueAddress() }),
    );
    expect(error).toMatchObject({ status: 429, code: 'too_many_requests' });
    const retryAfter = Number(error.headers['Retry-After']);
    expect(retryAfter).toBeGreaterThan(600 - 3 * 61 - 5);
    expect(retryAfter).toBeLessThanOrEqual(600 - 3 * 61 + 1);
    expect((error.details as { retryAfterSeconds: number }).retryAfterSeconds).toBe(retryAfter);
    vi.setSystemTime(Date.now() + retryAfter * 1000);
    await sendVerificationCode(deps, { identifier: to, purpose: 'login', ...uniqueAddress() });
  });

  it('sends at most 10 codes from one IP in 10 minutes', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const deps = dependencies();
    const from = uniqueAddress();
    for (let index = 0; index < 10; index++) {
      await sendVerificationCode(deps, { identifier: email(), purpose: 'contact_verify', ...from });
    }
    const error = await errorOf(
      sendVerificationCode(deps, { identifier: email(), purpose: 'contact_verify', ...from }),
    );
    expect(error.status).toBe(429);
    vi.setSystemTime(Date.now() + 601_000);
    await sendVerificationCode(deps, { identifier: email(), purpose: 'contact_verify', ...from });
  });

  it('holds under parallel requests: 10 parallel sends to one identifier send one code', async () => {
    const deps = dependencies();
    const to = email();
    const results = await Promise.allSettled(
      Array.from({ length: 10 }, () =>
        sendVerificationCode(deps, { identifier: to, purpose: 'login', ...uniqueAddress() }),
      ),
    );
    expect(results.filter((result) => result.status === 'fulfilled')).toHaveLength(1);
    expect(outbox.messagesTo(to.value)).toHaveLength(1);
    const refused = results.filter((result) => result.status === 'rejected') as PromiseRejectedResult[];
    expect(refused.every((result) => (result.reason as ApiError).status === 429)).toBe(true);
  });
});
