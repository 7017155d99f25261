import crypto from 'node:crypto';
import { issueMainAuthAccessToken } from '../../src/tokens/main-auth-access-token.js';
import { startTestSession } from './sign-in.js';
import type { TestService } from './test-service.js';

export interface ApiAnswer {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

export interface ApiCallOptions {
  /** Bearer access token. */
  token?: string;
  /** Caller IP, sent as X-Forwarded-For (the service must run with TRUST_PROXY=true). */
  ip?: string;
  method?: string;
}

/** Calls the identity JSON API (/api/v2/identity + path) with a JSON body. */
export async function callIdentityApi(
  service: TestService,
  path: string,
  body?: unknown,
  options: ApiCallOptions = {},
): Promise<ApiAnswer> {
  const headers: Record<string, string> = {};
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.ip) headers['x-forwarded-for'] = options.ip;
  const response = await fetch(service.url(`/api/v2/identity${path}`), {
    method: options.method ?? (body === undefined ? 'GET' : 'POST'),
    headers,
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : {} };
}

/** A main-auth access token for the user, as a login would issue, with a live session behind it (or the one given). */
export async function mainAuthTokenFor(
  service: TestService,
  userId: string,
  options: { authTime?: Date; sessionId?: string } = {},
): Promise<string> {
  const now = service.service.clock.now();
  const { token } = await issueMainAuthAccessToken(
    service.service.keys.mainAuth,
    { issuer: service.issuer, audience: service.service.config.apiAudience },
    {
      userId,
      tokenId: crypto.randomUUID(),
      sessionId:
        options.sessionId ?? (await startTestSession(service, userId, { authenticatedAt: options.authTime })),
      authMethod: 'pwd',
      authTime: options.authTime ?? now,
      roles: [],
      permissions: [],
    },
    now,
  );
  return token;
}

/** A random private IP, so each test has rate-limit and throttling budgets of its own. */
export function uniqueIp(): string {
  return `10.${crypto.randomInt(256)}.${crypto.randomInt(256)}.${crypto.randomInt(1, 255)}`;
}
