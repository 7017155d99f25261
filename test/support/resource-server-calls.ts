import { expect } from 'vitest';
import type { TestService } from './test-service.js';

/** A confidential client calling the service as a resource server does. */
export interface ResourceServerCredentials {
  clientId: string;
  secret: string;
}

/** POST /oauth/introspect with the caller's Basic credentials; the answer must be 200. */
export async function introspectAs(
  service: TestService,
  caller: ResourceServerCredentials,
  token: string,
): Promise<Record<string, unknown>> {
  const response = await fetch(service.url('/oauth/introspect'), {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `Basic ${Buffer.from(`${caller.clientId}:${caller.secret}`).toString('base64')}`,
    },
    body: new URLSearchParams({ token }),
  });
  expect(response.status).toBe(200);
  return (await response.json()) as Record<string, unknown>;
}

/** The status GET /oauth/userinfo answers for a bearer token. */
export async function userinfoStatus(service: TestService, token: string): Promise<number> {
  const response = await fetch(service.url('/oauth/userinfo'), {
    headers: { authorization: `Bearer ${token}` },
  });
  await response.body?.cancel();
  return response.status;
}
