import type { TestService } from '../../support/test-service.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- test bodies are read field by field
export type Json = any;

export interface JsonResponse<Body = Json> {
  status: number;
  headers: Headers;
  body: Body;
}

/** A JSON request to the platform API (/api/v2/platform + path). */
export async function platformRequest<Body = Json>(
  svc: TestService,
  method: string,
  path: string,
  options: { token?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<JsonResponse<Body>> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(svc.url(`/api/v2/platform${path}`), {
    method,
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : undefined };
}
