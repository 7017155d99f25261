import { expect } from 'vitest';
import { createTestClient, createTestUser } from '../../support/fixtures.js';
import { mainAuthToken } from '../../support/sign-in.js';
import type { TestService } from '../../support/test-service.js';
import { saveConsent } from '../../../src/oidc/models/consent.js';
import { ssoCodeGrantType } from '../../../src/oidc/sso/sso-clients.js';

/**
 * A confidential client of the code flow (the kind that takes users by one-time code) and a user who
 * consented to it earlier (`consent`, default openid profile email: a third-party client gets by code
 * only what the user consented to; `null`: never).
 */
export async function ssoParties(service: TestService, options: { consent?: string[] | null } = {}) {
  const { db, clock } = service.service;
  const user = await createTestUser(db);
  const { client, clientSecret } = await createTestClient(db, { type: 'confidential' });
  const consent = options.consent === undefined ? ['openid', 'profile', 'email'] : options.consent;
  if (consent) await saveConsent(db, user.id, client.clientId, consent, clock.now());
  const accessToken = await mainAuthToken(service, user);
  return { user, client, clientSecret: clientSecret!, accessToken };
}

export async function requestSsoCode(
  service: TestService,
  accessToken: string | undefined,
  body: unknown,
): Promise<Response> {
  return fetch(service.url('/oauth/sso/otc'), {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(accessToken ? { authorization: `Bearer ${accessToken}` } : {}),
    },
    body: JSON.stringify(body),
  });
}

/** The exchange as a client sends it: the extension grant at the token endpoint, Basic auth. */
export async function exchangeSsoCode(
  service: TestService,
  client: { clientId: string; clientSecret: string },
  code: string,
): Promise<Response> {
  return fetch(service.url('/oauth/token'), {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `Basic ${Buffer.from(`${client.clientId}:${client.clientSecret}`).toString('base64')}`,
    },
    body: new URLSearchParams({ grant_type: ssoCodeGrantType, code }),
  });
}

/**
 * Single use under concurrency: the same code sent by `parallel` exchanges at once gives tokens to
 * exactly one; the others get invalid_grant. On PGlite this shows the logic; on PostgreSQL the race.
 */
export async function proveSingleUseUnderParallelExchanges(service: TestService, parallel = 12) {
  const { client, clientSecret, accessToken } = await ssoParties(service);
  const issued = await requestSsoCode(service, accessToken, { client_id: client.clientId });
  expect(issued.status).toBe(201);
  const { code } = (await issued.json()) as { code: string };
  const answers = await Promise.all(
    Array.from({ length: parallel }, () =>
      exchangeSsoCode(service, { clientId: client.clientId, clientSecret }, code),
    ),
  );
  const statuses = answers.map((answer) => answer.status);
  expect(statuses.filter((status) => status === 200)).toHaveLength(1);
  expect(statuses.filter((status) => status === 400)).toHaveLength(parallel - 1);
  for (const answer of answers.filter((item) => item.status === 400)) {
    expect(await answer.json()).toMatchObject({ error: 'invalid_grant' });
  }
  const rows = await service.service
    .db('verification_codes')
    .where({ identifier: client.clientId, purpose: 'sso_otc' });
  expect(rows.map((row: { status: string }) => row.status)).toEqual(['used']);
}
