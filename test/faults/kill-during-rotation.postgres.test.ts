import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../support/database.js';
import { callbackUri, createTestClient, createTestUser } from '../support/fixtures.js';
import { HttpBrowser } from '../support/http-browser.js';
import {
  buildAuthorizationRequest,
  completeAuthorization,
  discover,
  signInThroughPages,
} from '../support/relying-party.js';
import { ServiceProcess } from './support/service-process.js';

// kill -9 of the serving process in the middle of a storm of refresh rotations and code redemptions,
// then a restart on the same database. What must hold afterwards (Jepsen-style: fault, then invariants):
// no refresh token both rotated and usable; every chain has exactly one live token or was revoked as
// reuse; the last token a client received is live unless its chain was revoked; no code redeemed twice.
let database: Awaited<ReturnType<typeof createTestDatabase>>;
let service: ServiceProcess;

const chainCount = 6;
const codeCount = 12;
const codesPerClient = 3;
/** Rotations per chain before the kill, at most: with the checks after it, within 20 a minute. */
const rotationCap = 10;

interface Chain {
  clientId: string;
  /** Every refresh token the client received, in order; the last is the one it holds. */
  received: string[];
  /** The last request's answer was lost with the process: the server may or may not have rotated. */
  uncertain: boolean;
}
interface PendingCode {
  clientId: string;
  code: string;
  verifier: string;
  /** Redemptions answered 200 (two race for each code). */
  redeemed: number;
}

const chains: Chain[] = [];
const codes: PendingCode[] = [];

beforeAll(async () => {
  database = await createTestDatabase();
  service = await ServiceProcess.start({ DATABASE_URL: database.url!, LOG_LEVEL: 'warn' });
  const user = await createTestUser(database.db);
  const browser = new HttpBrowser(service.issuer);
  // One client per chain: the engine keeps one grant (one token family) per user and client.
  for (let index = 0; index < chainCount; index++) {
    const { client } = await createTestClient(database.db);
    const config = await discover(service.issuer, client.clientId);
    const { tokens } = await completeAuthorization(config, browser, {
      identifier: user.email!,
      password: user.password,
    });
    chains.push({ clientId: client.clientId, received: [tokens.refresh_token!], uncertain: false });
  }
  // Codes of a few clients: each client may make 20 token requests a minute (the spec's limit).
  let config = await discover(service.issuer, chains[0]!.clientId);
  let client = { clientId: chains[0]!.clientId };
  for (let index = 0; index < codeCount; index++) {
    if (index % codesPerClient === 0) {
      client = (await createTestClient(database.db)).client;
      config = await discover(service.issuer, client.clientId);
    }
    const request = await buildAuthorizationRequest(config);
    const page = await signInThroughPages(browser, request.url, {
      identifier: user.email!,
      password: user.password,
    });
    const code = new URL(page.url).searchParams.get('code');
    if (!code) throw new Error(`no code: ${page.url}`);
    codes.push({ clientId: client.clientId, code, verifier: request.codeVerifier, redeemed: 0 });
  }
}, 120_000);

afterAll(async () => {
  await service?.kill();
  await database?.close();
});

function token(form: Record<string, string>): Promise<Response> {
  return fetch(service.url('/oauth/token'), {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(form),
    signal: AbortSignal.timeout(10_000),
  });
}

const refresh = (chain: Chain, refreshToken = chain.received.at(-1)!) =>
  token({ grant_type: 'refresh_token', refresh_token: refreshToken, client_id: chain.clientId });

const redeem = (pending: PendingCode) =>
  token({
    grant_type: 'authorization_code',
    code: pending.code,
    code_verifier: pending.verifier,
    redirect_uri: callbackUri,
    client_id: pending.clientId,
  });

/** Rotates the chain until the process dies under it. */
async function rotateUntilKilled(chain: Chain): Promise<void> {
  while (chain.received.length <= rotationCap) {
    let response: Response;
    try {
      response = await refresh(chain);
    } catch {
      chain.uncertain = true; // the connection died with the process: the answer is lost
      return;
    }
    if (response.status !== 200)
      throw new Error(`refresh answered ${response.status}: ${await response.text()}`);
    try {
      const body = (await response.json()) as { refresh_token: string };
      chain.received.push(body.refresh_token);
    } catch {
      chain.uncertain = true;
      return;
    }
  }
}

async function redeemRacing(pending: PendingCode): Promise<void> {
  await Promise.all(
    [0, 1].map(async () => {
      try {
        const response = await redeem(pending);
        if (response.status === 200) pending.redeemed++;
        await response.body?.cancel();
      } catch {
        // lost with the process
      }
    }),
  );
}

describe('kill -9 during refresh rotations and code redemptions', () => {
  it('leaves no rotated token usable, one live token per chain, no code redeemed twice', async () => {
    const storm = [
      ...chains.map((chain) => rotateUntilKilled(chain)),
      (async () => {
        for (const pending of codes) await redeemRacing(pending);
      })(),
    ];
    // Let the storm run until each chain rotated a few times and some codes were redeemed, then cut the
    // process where it is, requests in flight.
    await expect
      .poll(
        () =>
          chains.every((chain) => chain.received.length >= 4) &&
          codes.filter((pending) => pending.redeemed > 0).length >= 3,
        { timeout: 30_000, interval: 10 },
      )
      .toBe(true);
    await service.kill();
    await Promise.all(storm);
    expect(chains.every((chain) => chain.received.length > 1)).toBe(true);

    await service.restart();

    // In the database: a token rotated is never still usable; a chain has one live token or none (revoked).
    const families = await database.db.raw<{
      rows: { family: string; live: number; rotatedButUsable: number; revoked: number; total: number }[];
    }>(
      `select token_family_id as family,
              count(*) filter (where consumed_at is null and revoked_at is null)::int as live,
              count(*) filter (where consumed_at is not null and revoked_at is null)::int as "rotatedButUsable",
              count(*) filter (where revoked_at is not null)::int as revoked,
              count(*)::int as total
         from oauth_refresh_tokens where client_id = any(?) group by token_family_id`,
      [chains.map((chain) => chain.clientId)],
    );
    expect(families.rows).toHaveLength(chainCount);
    for (const family of families.rows) {
      expect(family.rotatedButUsable).toBe(0);
      expect(family.live).toBeLessThanOrEqual(1);
    }

    // Over HTTP, as the clients see it after the restart.
    for (const chain of chains) {
      const answer = await refresh(chain);
      const body = (await answer.json()) as { refresh_token?: string; error?: string };
      if (chain.uncertain) {
        // The last answer was lost: either the rotation never committed (the held token still works), or
        // it did and presenting the held, rotated token is reuse (the chain is revoked). Never a 500.
        expect([200, 400]).toContain(answer.status);
        if (answer.status === 400) expect(body.error).toBe('invalid_grant');
      } else {
        // The client has the last token the server issued: it must work.
        expect(answer.status, JSON.stringify(body)).toBe(200);
      }
      if (answer.status === 200) chain.received.push(body.refresh_token!);
      // A rotated token is refused (and, as reuse, revokes the chain).
      const replayed = await refresh(chain, chain.received.at(-2)!);
      expect(replayed.status).toBe(400);
      expect(((await replayed.json()) as { error: string }).error).toBe('invalid_grant');
      const afterReuse = await refresh(chain);
      expect(afterReuse.status).toBe(400);
    }
    const after = await database
      .db('oauth_refresh_tokens')
      .whereIn(
        'client_id',
        chains.map((chain) => chain.clientId),
      )
      .whereNull('revoked_at')
      .count({ count: '*' });
    expect(Number(after[0]!.count)).toBe(0);

    // Codes: at most one redemption each, counting one more attempt after the restart (a code never
    // reached, or whose redemption died uncommitted, may be redeemed now, once); then none is redeemable.
    for (const pending of codes) {
      const afterRestart = await redeem(pending);
      expect([200, 400]).toContain(afterRestart.status);
      await afterRestart.body?.cancel();
      expect(pending.redeemed + (afterRestart.status === 200 ? 1 : 0)).toBeLessThanOrEqual(1);
      const again = await redeem(pending);
      expect(again.status).toBe(400);
      expect(((await again.json()) as { error: string }).error).toBe('invalid_grant');
    }
    expect(codes.some((pending) => pending.redeemed === 1)).toBe(true);
  }, 90_000);
});
