import type { Context } from 'koa';

/**
 * Content-Security-Policy of the HTML answers (our pages, the engine's error and form_post pages): no
 * inline script, nothing from other origins, never in a frame. The engine adds the hash of its
 * form_post page's one inline script to script-src itself (it extends the policy it finds).
 */
const pagePolicy = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: https:",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "object-src 'none'",
].join('; ');

/** Any other answer (JSON, redirects' bodies, assets) loads nothing and is never framed. */
const resourcePolicy = "default-src 'none'; frame-ancestors 'none'";

/** RFC 6797: browsers keep to https for a year, subdomains included. */
const strictTransportSecurity = 'max-age=31536000; includeSubDomains';

export interface SecurityHeaders {
  /** Before the routes run, so the engine can extend the CSP. */
  beforeAnswer(ctx: Context): void;
  /** Afterwards: again where an error answer dropped them, and the CSP narrowed for what is not HTML. */
  afterAnswer(ctx: Context): void;
}

/**
 * The security headers of every answer, decided here and nowhere else (the request envelope sets them
 * around every request):
 *
 * - `X-Content-Type-Options: nosniff`: a body is only ever what its Content-Type says;
 * - a Content-Security-Policy with `frame-ancestors 'none'` (and `X-Frame-Options: DENY` for browsers
 *   without CSP 2): no page of the service can be framed (clickjacking of consent or sign-in);
 * - `Referrer-Policy: no-referrer`: authorization and reset URLs never leak in a Referer;
 * - `Strict-Transport-Security` when the issuer is https (behind a TLS-terminating proxy the request
 *   itself may arrive over http), and only then.
 */
export function securityHeaders(options: { https: boolean }): SecurityHeaders {
  const headers: Record<string, string> = {
    'X-Content-Type-Options': 'nosniff',
    'Content-Security-Policy': pagePolicy,
    'X-Frame-Options': 'DENY',
    'Referrer-Policy': 'no-referrer',
    ...(options.https ? { 'Strict-Transport-Security': strictTransportSecurity } : {}),
  };
  const entries = Object.entries(headers);
  const setMissing = (ctx: Context) => {
    for (const [name, value] of entries) if (!ctx.res.hasHeader(name)) ctx.res.setHeader(name, value);
  };
  return {
    beforeAnswer: setMissing,
    afterAnswer(ctx) {
      if (ctx.headerSent) return;
      setMissing(ctx);
      if (!isHtml(ctx.res.getHeader('content-type')))
        ctx.res.setHeader('Content-Security-Policy', resourcePolicy);
    },
  };
}

/**
 * Whether the answer is HTML: its media type, without parameters or case. (Koa's `ctx.response.is`
 * parses the header and looks the type up in the MIME database, on every answer.)
 */
function isHtml(contentType: number | string | string[] | undefined): boolean {
  if (typeof contentType !== 'string') return false;
  const semicolon = contentType.indexOf(';');
  const mediaType = (semicolon === -1 ? contentType : contentType.slice(0, semicolon)).trim().toLowerCase();
  return mediaType === 'text/html';
}
