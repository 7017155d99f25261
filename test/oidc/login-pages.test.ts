import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestClient, createTestUser, uniqueEmail } from '../support/fixtures.js';
import { HttpBrowser, pageText, type Page } from '../support/http-browser.js';
import type { Configuration } from 'openid-client';
import { assertLoginAllowed, recordLoginFailure } from '../../src/identity/brute-force/login-protection.js';
import { buildAuthorizationRequest, discover } from '../support/relying-party.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { defaults } from '../../src/defaults.js';
import { savePasswordHash } from '../../src/identity/passwords/password-credential.js';
import { hashPassword } from '../../src/identity/passwords/password-hash.js';

let service: TestService;
let config: Configuration;
let authorizationUrl: () => Promise<string>;

beforeAll(async () => {
  service = await startTestService();
  const { client } = await createTestClient(service.service.db);
  config = await discover(service.issuer, client.clientId);
  authorizationUrl = async () => (await buildAuthorizationRequest(config)).url.toString();
});
afterAll(() => service?.close());

/** A service's login pages, reached through a relying party's authorization request. */
interface LoginPages {
  issuer: string;
  authorizationUrl(): Promise<string>;
}

async function passwordPage(
  identifier: string,
  pages: LoginPages = { issuer: service.issuer, authorizationUrl },
): Promise<{ browser: HttpBrowser; page: Page }> {
  const browser = new HttpBrowser(pages.issuer);
  const start = await browser.navigate(await pages.authorizationUrl());
  return { browser, page: await browser.submit(start, { identifier }) };
}

async function timedPasswordAttempt(identifier: string, password: string, pages?: LoginPages) {
  const { browser, page } = await passwordPage(identifier, pages);
  // The service runs in this process, argon2id on its thread pool: the process's CPU time is the work
  // the attempt cost, which other test files' load on the cores does not change (its wall time varied
  // from 25 to 450 ms under a full run beside it).
  const cpu = process.cpuUsage();
  const answer = await browser.submit(page, { password });
  const used = process.cpuUsage(cpu);
  return { answer, cpuMs: (used.user + used.system) / 1000 };
}

describe('the login funnel pages', () => {
  it('asks for the password after any well-formed identifier, known or not', async () => {
    const user = await createTestUser(service.service.db);
    for (const identifier of [user.email!, uniqueEmail('nobody')]) {
      const { page } = await passwordPage(identifier);
      expect(page.status).toBe(200);
      expect(page.html).toContain('name="password"');
      expect(pageText(page, 'identifier')).toBe(identifier);
    }
  });

  it('answers an unknown identifier exactly like a wrong password, in the same time', async () => {
    // Nine attempts of each kind, in turns. Three wrong passwords for each of three users stay below the
    // lockout ladder's first rung (five in a row); a service of its own keeps the 18 failures from one
    // address below the IP throttle's first threshold (20) for the other tests.
    // The production argon2id parameters (tests elsewhere hash at the cheapest): a real verification is
    // compared with the decoy's.
    const timed = await startTestService({ settings: { passwordHashing: defaults.passwordHashing } });
    const wrongPassword: number[] = [];
    const unknownIdentifier: number[] = [];
    let answers: Page[] = [];
    try {
      const { client } = await createTestClient(timed.service.db);
      const relyingParty = await discover(timed.issuer, client.clientId);
      const pages: LoginPages = {
        issuer: timed.issuer,
        authorizationUrl: async () => (await buildAuthorizationRequest(relyingParty)).url.toString(),
      };
      for (let index = 0; index < 3; index++) {
        const user = await createTestUser(timed.service.db);
        const hash = await hashPassword(user.password, defaults.passwordHashing);
        await savePasswordHash(timed.service.db, user.id, hash, new Date());
        for (let attempt = 0; attempt < 3; attempt++) {
          const wrong = await timedPasswordAttempt(user.email!, 'not the password', pages);
          const unknown = await timedPasswordAttempt(uniqueEmail('nobody'), 'not the password', pages);
          wrongPassword.push(wrong.cpuMs);
          unknownIdentifier.push(unknown.cpuMs);
          answers = [wrong.answer, unknown.answer];
        }
      }
    } finally {
      await timed.close();
    }
    const [wrong, unknown] = answers as [Page, Page];
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(wrong.status);
    expect(pageText(unknown, 'form-error')).toBe(pageText(wrong, 'form-error'));
    // Both verify one argon2id hash: each attempt costs ~25-35 ms of CPU here, of which ~9 ms are the
    // request's. An early exit for unknown users would cost a third as much, a second verification for
    // known ones ~2/3 more. The cheapest of each is compared (the first attempts also compile the code).
    const [a, b] = [Math.min(...wrongPassword), Math.min(...unknownIdentifier)];
    expect(Math.abs(a - b)).toBeLessThan(Math.max(a, b) * 0.3);
  });

  it('refuses a disabled user with the same answer as a wrong password', async () => {
    const user = await createTestUser(service.service.db);
    await service.service.db('users').where({ id: user.id }).update({ status: 'disabled' });
    const { answer } = await timedPasswordAttempt(user.email!, user.password);
    expect(answer.status).toBe(401);
    expect(pageText(answer, 'form-error')).toMatch(/not right/);
  });

  it('explains a malformed identifier and stays on the first step', async () => {
    const { page } = await passwordPage('not an email or phone');
    expect(page.status).toBe(400);
    expect(page.html).toContain('name="identifier"');
    expect(pageText(page, 'form-error')).toMatch(/email address or a phone number/);
  });

  it('does not accept a replayed step: the flow session id is single-use', async () => {
    const browser = new HttpBrowser(service.issuer);
    const start = await browser.navigate(await authorizationUrl());
    const first = await browser.submit(start, { identifier: uniqueEmail() });
    expect(first.html).toContain('name="password"');
    const replay = await browser.submit(start, { identifier: uniqueEmail() });
    expect(replay.status).toBe(410);
    expect(pageText(replay, 'form-error')).toMatch(/expired or was already used/);
    expect(replay.html).toContain('name="identifier"');
  });

  it('refuses the login page of an interaction from another browser', async () => {
    const browser = new HttpBrowser(service.issuer);
    const start = await browser.navigate(await authorizationUrl());
    const stranger = await fetch(start.url);
    expect(stranger.status).toBe(400);
    expect(await stranger.text()).toContain('interaction_expired');
  });
});

describe('the login pages and the brute-force protection', () => {
  it('a browser that signed in before still gets in while attackers have closed the account to strangers', async () => {
    const { db, clock } = service.service;
    const user = await createTestUser(db);
    const owner = new HttpBrowser(service.issuer);
    const signIn = async (browser: HttpBrowser) => {
      const url = (await buildAuthorizationRequest(config, { prompt: 'login' })).url.toString();
      const start = await browser.navigate(url);
      const passwordStep = await browser.submit(start, { identifier: user.email! });
      const answer = await browser.submit(passwordStep, { password: user.password });
      return answer.html.includes('name="decision"') ? browser.submit(answer, { decision: 'allow' }) : answer;
    };
    expect((await signIn(owner)).url).toMatch(/^http:\/\/localhost:8080\/callback\?/);
    expect(owner.cookieNames()).toContain('service_id_device');

    // 100 failed guesses from 25 addresses, as the password step records them.
    const protection = { db, clock };
    for (let index = 0; index < 100; index++) {
      const ip = `203.0.113.${index % 25}`;
      const guess = { userId: user.id, ip, addressBlock: ip, identifier: user.email! };
      const claim = await assertLoginAllowed(protection, guess);
      await recordLoginFailure(protection, { ...guess, userAgent: 'attacker', method: 'password', claim });
    }

    const stranger = await signIn(new HttpBrowser(service.issuer));
    expect(stranger.status).toBe(429);
    // Closed until the first of the 100 failures is an hour old.
    expect(Number(stranger.headers.get('retry-after'))).toBeGreaterThan(3500);
    expect((await signIn(owner)).url).toMatch(/^http:\/\/localhost:8080\/callback\?/);
  });
});
