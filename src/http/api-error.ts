/**
 * The one error shape of the service's JSON APIs (/api/v2/*, and the non-OAuth parts of /oauth/*):
 *
 *   { "error": "<machine code>", "message": "<sentence for a human>", "details": <optional> }
 *
 * OAuth protocol endpoints answer RFC 6749 / RFC 6750 errors instead ({ error, error_description }).
 */
export interface ApiErrorBody {
  error: string;
  message: string;
  details?: unknown;
}

export class ApiError extends Error {
  override name = 'ApiError';

  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: unknown,
    /** Extra response headers, e.g. Retry-After on 429. */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }

  toBody(): ApiErrorBody {
    return this.details === undefined
      ? { error: this.code, message: this.message }
      : { error: this.code, message: this.message, details: this.details };
  }
}

export const badRequest = (message: string, details?: unknown) =>
  new ApiError(400, 'invalid_request', message, details);
export const unauthorized = (message = 'Authentication is required.', code = 'unauthorized') =>
  new ApiError(401, code, message);
export const forbidden = (message = 'You are not allowed to do this.') =>
  new ApiError(403, 'forbidden', message);
export const notFound = (message = 'Not found.') => new ApiError(404, 'not_found', message);
export const payloadTooLarge = () => new ApiError(413, 'payload_too_large', 'The request body is too large.');
export const unsupportedMediaType = (message: string) => new ApiError(415, 'unsupported_media_type', message);
export const conflict = (message: string, details?: unknown) =>
  new ApiError(409, 'conflict', message, details);
export const tooManyRequests = (retryAfterSeconds: number, message?: string) =>
  new ApiError(
    429,
    'too_many_requests',
    message ?? `Too many requests. Try again in ${retryAfterSeconds} seconds.`,
    { retryAfterSeconds },
    { 'Retry-After': String(retryAfterSeconds) },
  );
export const serviceUnavailable = (retryAfterSeconds: number) =>
  new ApiError(
    503,
    'service_unavailable',
    `The service is briefly unavailable. Try again in ${retryAfterSeconds} seconds.`,
    undefined,
    { 'Retry-After': String(retryAfterSeconds) },
  );
