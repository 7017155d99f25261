import type { Context } from 'koa';
import { ApiError } from './api-error.js';
import { nulCharacterRefused } from './storable-input.js';

/**
 * The most a request line and its headers may take together. Node's parser is given more (64 KB,
 * http-server.ts) so that a request between the two reaches the request envelope, which refuses it
 * here with 431 (RFC 6585 §5) in its endpoint's shape: the error page for a browser's authorize URL,
 * RFC 6749 JSON for the token endpoint, our JSON API's body for the APIs.
 */
export const maxRequestHeadBytes = 16 * 1024;

export const requestHeadTooLargeMessage = 'The request line and headers must not exceed 16 KB together.';

/** Before any route: the request line and headers within their limit, and no NUL in the URL. */
export function checkRequestHead(ctx: Context): void {
  const { req } = ctx;
  // "METHOD URL HTTP/1.1\r\n", then "Name: value\r\n" for each header.
  let size = req.method!.length + req.url!.length + 11;
  const raw = req.rawHeaders;
  for (let index = 0; index < raw.length; index += 2) size += raw[index]!.length + raw[index + 1]!.length + 4;
  if (size > maxRequestHeadBytes) {
    throw new ApiError(431, 'request_header_fields_too_large', requestHeadTooLargeMessage);
  }
  if (req.url!.includes('%00')) throw nulCharacterRefused('The URL');
}
