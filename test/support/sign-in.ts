import crypto from 'node:crypto';
import type { Queryable } from '../../src/db/database.js';
import { insertSession } from '../../src/identity/sessions/sessions.js';
import type { SigningKey } from '../../src/keys/signing-keys.js';
import { issueMainAuthAccessToken } from '../../src/tokens/main-auth-access-token.js';
import { createTestClient, createTestUser } from './fixtures.js';
import { HttpBrowser } from './http-browser.js';
import { completeAuthorization, discover } from './relying-party.js';
import type { TestService } from './test-service.js';

/**
 * Signs `user` in to a new application (named `name`, when given) through the pages in `browser`: the
 * engine's session in that browser, and the application's grant with its tokens.
 */
export async function signInToNewApplication(
  service: TestService,
  browser: HttpBrowser,
  user: { email?: string | null; password: string },
  name?: string,
) {
  const { client } = await createTestClient(service.service.db, name === undefined ? {} : { name });
  const config = await discover(service.issuer, client.clientId);
  const { tokens } = await completeAuthorization(config, browser, {
    identifier: user.email!,
    password: user.password,
  });
  return { clientId: client.clientId, config, tokens };
}

/**
 * A new user signs in in `browser` to a new application that gets no refresh tokens, then the
 * application authorizes again there (prompt=none): two grants of one engine session, which names only
 * the second. Answers the access tokens of both authorizations.
 */
export async function authorizeTwiceWithoutRefreshTokens(service: TestService, browser: HttpBrowser) {
  const user = await createTestUser(service.service.db);
  const { client } = await createTestClient(service.service.db, { grantTypes: ['authorization_code'] });
  const config = await discover(service.issuer, client.clientId);
  const signIn = { identifier: user.email!, password: user.password };
  const first = await completeAuthorization(config, browser, signIn);
  if (first.tokens.refresh_token) throw new Error('the application got a refresh token');
  const again = await completeAuthorization(config, browser, {
    ...signIn,
    consent: 'expect-none',
    parameters: { prompt: 'none' },
  });
  return {
    user,
    clientId: client.clientId,
    first: first.tokens.access_token,
    again: again.tokens.access_token,
  };
}

/** A user signed in to a fresh client through the pages, with the tokens openid-client received. */
export async function userWithTokens(service: TestService, clientType: 'public' | 'confidential' = 'public') {
  const { db } = service.service;
  const user = await createTestUser(db);
  const { client, clientSecret } = await createTestClient(db, {
    type: clientType,
    postLogoutRedirectUris: ['http://localhost:8080/signed-out'],
  });
  const config = await discover(service.issuer, client.clientId, clientSecret);
  const browser = new HttpBrowser(service.issuer);
  const { tokens } = await completeAuthorization(config, browser, {
    identifier: user.email!,
    password: user.password,
  });
  return { user, client, clientSecret, config, tokens, browser };
}

/**
 * A main-auth session of the user, as a login through the API starts (the record only: no refresh
 * token, no device). Account routes accept only the access tokens of a live session; `authenticatedAt`
 * (default now) is its last authentication, which sensitive changes check.
 */
export async function startTestSession(
  service: TestService,
  userId: string,
  options: { authenticatedAt?: Date | undefined } = {},
): Promise<string> {
  return insertTestSession(service.service.db, userId, service.service.clock.now(), options);
}

/**
 * The same session record, for a service the test does not run in-process (its database given):
 * main-auth tokens are refused everywhere without a live session behind them.
 */
export async function insertTestSession(
  db: Queryable,
  userId: string,
  now = new Date(),
  options: { authenticatedAt?: Date | undefined } = {},
): Promise<string> {
  const session = await insertSession(
    db,
    {
      id: crypto.randomUUID(),
      refreshTokenId: crypto.randomUUID(),
      userId,
      userAgent: 'test',
      ipAddress: '127.0.0.1',
      browserName: '',
      authMethod: 'pwd',
    },
    now,
  );
  if (options.authenticatedAt) {
    await db('sessions')
      .where({ id: session.id })
      .update({ auth_time: options.authenticatedAt, last_authenticated_at: options.authenticatedAt });
  }
  return session.id;
}

/**
 * A main-auth access token for a user, as the identity API issues at login (signed with the main-auth
 * key), with the live session behind it.
 */
export async function mainAuthToken(
  service: TestService,
  user: { id: string },
  options: MainAuthTokenOptions = {},
): Promise<string> {
  return signMainAuthToken(
    service.service.keys.mainAuth,
    { issuer: service.issuer, audience: service.service.config.apiAudience },
    user,
    {
      ...options,
      sessionId:
        options.sessionId ??
        (await startTestSession(service, user.id, { authenticatedAt: options.authTime })),
    },
  );
}

export interface MainAuthTokenOptions {
  permissions?: string[];
  roles?: string[];
  authTime?: Date;
  issuedAt?: Date;
  /** The session the token belongs to; `mainAuthToken` starts one when absent. */
  sessionId?: string;
}

/** The same token for a service the test does not run in-process (its key and issuer given). */
export async function signMainAuthToken(
  key: SigningKey,
  audience: { issuer: string; audience: string },
  user: { id: string },
  options: MainAuthTokenOptions = {},
): Promise<string> {
  const { token } = await issueMainAuthAccessToken(
    key,
    audience,
    {
      userId: user.id,
      tokenId: crypto.randomUUID(),
      sessionId: options.sessionId ?? crypto.randomUUID(),
      authMethod: 'pwd',
      authTime: options.authTime ?? new Date(),
      roles: options.roles ?? [],
      permissions: options.permissions ?? [],
    },
    options.issuedAt ?? new Date(),
  );
  return token;
}
