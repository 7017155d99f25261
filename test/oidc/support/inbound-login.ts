import { expect } from 'vitest';
import { createTestClient, createTestUser } from '../../support/fixtures.js';
import { HttpBrowser } from '../../support/http-browser.js';
import { completeAuthorization, discover } from '../../support/relying-party.js';
import type { TestService } from '../../support/test-service.js';

/**
 * A first-party confidential client holding a user's access token from a real code flow. The token is
 * granted `roles` unless `scope` says otherwise: only a token carrying the user's authority starts a
 * main-auth session (docs/inbound-sso.md).
 */
export async function firstPartyClientWithUserToken(
  service: TestService,
  options: { firstParty?: boolean; scope?: string; roles?: string[] } = {},
) {
  const { db } = service.service;
  const user = await createTestUser(db, { roles: options.roles ?? [] });
  const { client, clientSecret } = await createTestClient(db, {
    type: 'confidential',
    firstParty: options.firstParty ?? true,
  });
  const config = await discover(service.issuer, client.clientId, clientSecret);
  const { tokens } = await completeAuthorization(config, new HttpBrowser(service.issuer), {
    identifier: user.email!,
    password: user.password,
    parameters: { scope: options.scope ?? 'openid profile email roles' },
  });
  return {
    user,
    client,
    clientId: client.clientId,
    clientSecret: clientSecret!,
    accessToken: tokens.access_token,
  };
}

export async function requestLoginToken(
  service: TestService,
  client: { clientId: string; clientSecret: string },
  body: unknown,
): Promise<Response> {
  return fetch(service.url('/oauth/sso/inbound'), {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      authorization: `Basic ${Buffer.from(`${client.clientId}:${client.clientSecret}`).toString('base64')}`,
    },
    body: JSON.stringify(body),
  });
}

/** The application trades its user's access token for an inbound login token (its back end). */
export async function loginTokenFor(
  service: TestService,
  application: { clientId: string; clientSecret: string },
  accessToken: string,
): Promise<string> {
  const issued = await requestLoginToken(service, application, { access_token: accessToken });
  expect(issued.status).toBe(201);
  return ((await issued.json()) as { login_token: string }).login_token;
}

const refreshCookieName = 'service_id_refresh_token=';

/** The browser redeems a login token at the identity API: the session's refresh cookie and access token. */
export async function signInWithLoginToken(service: TestService, loginToken: string) {
  const answer = await fetch(service.url('/api/v2/identity/auth/inbound'), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ loginToken }),
  });
  const refreshCookie = answer.headers
    .getSetCookie()
    .find((cookie) => cookie.startsWith(refreshCookieName))
    ?.split(';')[0];
  const body = (await answer.json()) as { accessToken?: string };
  return { status: answer.status, refreshCookie, accessToken: body.accessToken };
}

/** A refresh with the cookie: its status, and the cookie that replaces it (refresh tokens rotate). */
export async function refreshWithCookie(
  service: TestService,
  refreshCookie: string,
): Promise<{ status: number; refreshCookie: string }> {
  const answer = await fetch(service.url('/api/v2/identity/auth/refresh'), {
    method: 'POST',
    headers: { cookie: refreshCookie },
  });
  const rotated = answer.headers
    .getSetCookie()
    .find((cookie) => cookie.startsWith(refreshCookieName))
    ?.split(';')[0];
  return { status: answer.status, refreshCookie: rotated ?? refreshCookie };
}
