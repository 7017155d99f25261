import http from 'node:http';
import type { Duplex } from 'node:stream';

/**
 * The service's HTTP server: Node's, with two settings of ours.
 *
 * - Kept-alive connections idle for 65 s: longer than any client's idle timeout (undici's is 4 s), so
 *   a client never reuses a connection the server is closing at that moment (ECONNRESET under load).
 * - Requests Node's parser refuses before the app sees them (a request line or headers over its 16 KB
 *   limit, bytes that are not HTTP/1.1) get a JSON error body instead of Node's empty one. The path is
 *   not known at that point, so the body carries both documented shapes' fields: `error` and
 *   `error_description` (RFC 6749 §5.2, the OAuth endpoints) and `message` (our JSON APIs).
 */
export function createHttpServer(listener: http.RequestListener): http.Server {
  const server = http.createServer(listener);
  server.keepAliveTimeout = 65_000;
  server.on('clientError', answerUnparsableRequest);
  return server;
}

const refusals: Record<string, { status: number; error: string; description: string }> = {
  HPE_HEADER_OVERFLOW: {
    status: 431,
    error: 'request_header_fields_too_large',
    description: 'the request line and headers must not exceed 16 KB together',
  },
  ERR_HTTP_REQUEST_TIMEOUT: {
    status: 408,
    error: 'request_timeout',
    description: 'the request did not arrive in time',
  },
};

const notHttp = { status: 400, error: 'invalid_request', description: 'the request is not valid HTTP/1.1' };

function answerUnparsableRequest(error: NodeJS.ErrnoException, socket: Duplex): void {
  // As Node's own answer: never on a reset connection, nor into a response already being sent
  // (a refused request pipelined behind one in flight).
  const inFlight = (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (error.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  const refusal = refusals[error.code ?? ''] ?? notHttp;
  const body = JSON.stringify({
    error: refusal.error,
    error_description: refusal.description,
    message: refusal.description,
  });
  socket.end(
    `HTTP/1.1 ${refusal.status} ${http.STATUS_CODES[refusal.status]}\r\n` +
      'Content-Type: application/json; charset=utf-8\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      'Cache-Control: no-store\r\n' +
      'X-Content-Type-Options: nosniff\r\n' +
      'Connection: close\r\n\r\n' +
      body,
  );
}
