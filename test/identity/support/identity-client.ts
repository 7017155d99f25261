import crypto from 'node:crypto';
import { expect } from 'vitest';
import type { TestService } from '../../support/test-service.js';

export const apiPrefix = '/api/v2/identity';

/** A response of the identity API, JSON body parsed, Set-Cookie lines split by cookie name. */
export interface ApiResponse<Body = Record<string, unknown>> {
  status: number;
  body: Body;
  headers: Headers;
  setCookies: SetCookie[];
}

export interface SetCookie {
  name: string;
  value: string;
  attributes: Record<string, string | true>;
  raw: string;
}

export function parseSetCookies(headers: Headers): SetCookie[] {
  return headers.getSetCookie().map((raw) => {
    const [pair, ...parts] = raw.split(';').map((part) => part.trim());
    const separator = pair!.indexOf('=');
    const attributes: Record<string, string | true> = {};
    for (const part of parts) {
      const index = part.indexOf('=');
      if (index < 0) attributes[part.toLowerCase()] = true;
      else attributes[part.slice(0, index).toLowerCase()] = part.slice(index + 1);
    }
    return { name: pair!.slice(0, separator), value: pair!.slice(separator + 1), attributes, raw };
  });
}

/** A distinct client address per call, so the per-IP limits of one test don't spill into another. */
export function randomIp(): string {
  return `10.${crypto.randomInt(256)}.${crypto.randomInt(256)}.${crypto.randomInt(1, 255)}`;
}

export interface RequestOptions {
  token?: string;
  cookie?: string;
  ip?: string;
  userAgent?: string;
  /** A raw body (for malformed-JSON tests); otherwise `body` is sent as JSON. */
  rawBody?: string;
}

export class IdentityClient {
  constructor(private readonly service: TestService) {}

  async request<Body = Record<string, unknown>>(
    method: string,
    path: string,
    body?: unknown,
    options: RequestOptions = {},
  ): Promise<ApiResponse<Body>> {
    const headers: Record<string, string> = {
      'user-agent':
        options.userAgent ?? 'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0',
    };
    if (options.ip) headers['x-forwarded-for'] = options.ip;
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    if (options.cookie) headers.cookie = options.cookie;
    let payload: string | undefined;
    if (options.rawBody !== undefined) payload = options.rawBody;
    else if (body !== undefined) payload = JSON.stringify(body);
    if (payload !== undefined) headers['content-type'] = 'application/json';
    const response = await fetch(this.service.url(`${apiPrefix}${path}`), { method, headers, body: payload });
    const text = await response.text();
    return {
      status: response.status,
      body: (text ? JSON.parse(text) : {}) as Body,
      headers: response.headers,
      setCookies: parseSetCookies(response.headers),
    };
  }

  post<Body = Record<string, unknown>>(path: string, body?: unknown, options?: RequestOptions) {
    return this.request<Body>('POST', path, body, options);
  }

  get<Body = Record<string, unknown>>(path: string, options?: RequestOptions) {
    return this.request<Body>('GET', path, undefined, options);
  }

  delete<Body = Record<string, unknown>>(path: string, options?: RequestOptions) {
    return this.request<Body>('DELETE', path, undefined, options);
  }

  /** POST /auth/flow/start; expects the flow to start. */
  async start(flow: 'login' | 'registration' = 'login', options: RequestOptions = {}): Promise<FlowState> {
    const response = await this.post<FlowState>('/auth/flow/start', { flow }, options);
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    return response.body;
  }

  step(sessionId: string, step: string, input: Record<string, unknown>, options: RequestOptions = {}) {
    return this.post<FlowState & SignedIn & Partial<ErrorBody>>(
      '/auth/flow/step',
      { sessionId, step, input },
      options,
    );
  }

  /** Submits a step and expects the flow to go on. */
  async pass(sessionId: string, step: string, input: Record<string, unknown>, options: RequestOptions = {}) {
    const response = await this.step(sessionId, step, input, options);
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    return response.body;
  }

  /** The base login (identifier, password) through the API; answers the tokens and cookies. */
  async login(identifier: string, password: string, options: RequestOptions = {}): Promise<Login> {
    const requestOptions = { ...options, ip: options.ip ?? randomIp() };
    const started = await this.start('login', requestOptions);
    const identified = await this.pass(started.sessionId, 'phone-email', { identifier }, requestOptions);
    expect(identified.nextStep).toBe('password');
    const response = await this.step(identified.sessionId, 'password', { password }, requestOptions);
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    return loginFrom(response);
  }
}

export interface FlowState {
  status: 'in_progress' | 'completed';
  flow: string;
  sessionId: string;
  expiresAt: string;
  completedSteps: string[];
  nextStep: string;
  screen: {
    stepId: string;
    title: string;
    fields: { name: string; type: string }[];
    data?: Record<string, unknown>;
  }[];
}

/** The one error body of the identity API. */
export interface ErrorBody {
  error: string;
  message: string;
  details?: unknown;
  /** The request's id (also its X-Request-Id header). */
  request_id?: string;
}

export interface SignedIn {
  status: 'completed';
  userId: string;
  sessionId: string;
  accessToken: string;
  tokenType: string;
  expiresIn: number;
}

export interface Login extends SignedIn {
  /** `service_id_refresh_token=<value>`, to send back to /auth/refresh and /auth/logout. */
  refreshCookie: string;
  refreshToken: string;
  deviceCookie: string | undefined;
  response: ApiResponse<FlowState & SignedIn>;
}

export function loginFrom(response: ApiResponse<FlowState & SignedIn>): Login {
  expect(response.body.status, JSON.stringify(response.body)).toBe('completed');
  const refresh = response.setCookies.find((cookie) => cookie.name === 'service_id_refresh_token');
  expect(refresh).toBeDefined();
  const device = response.setCookies.find((cookie) => cookie.name === 'service_id_device');
  return {
    ...response.body,
    refreshCookie: `service_id_refresh_token=${refresh!.value}`,
    refreshToken: refresh!.value,
    deviceCookie: device ? `service_id_device=${device.value}` : undefined,
    response,
  };
}

/** The new refresh cookie a response set (the rotated token). */
export function refreshCookieOf(response: ApiResponse<unknown>): string | undefined {
  const cookie = response.setCookies.find(
    (item) => item.name === 'service_id_refresh_token' && item.value !== '',
  );
  return cookie ? `service_id_refresh_token=${cookie.value}` : undefined;
}

export { MovableClock } from '../../support/manual-clock.js';
