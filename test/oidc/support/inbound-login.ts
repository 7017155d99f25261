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
