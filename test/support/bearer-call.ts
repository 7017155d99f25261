import type { TestService } from './test-service.js';

export interface BearerAnswer {
  status: number;
  /** The WWW-Authenticate header, if any. */
  challenge: string | null;
  /** The JSON body, or {} for an empty one. */
  body: Record<string, unknown>;
}

/** A request to one of the service's APIs with a bearer token, and a JSON body when one is given. */
export async function bearerCall(
  service: TestService,
  method: string,
  path: string,
  token: string,
  body?: unknown,
): Promise<BearerAnswer> {
  const response = await fetch(service.url(path), {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return {
    status: response.status,
    challenge: response.headers.get('www-authenticate'),
    body: text ? (JSON.parse(text) as Record<string, unknown>) : {},
  };
}
