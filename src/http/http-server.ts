import http from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { isJsonApiPath } from './json-api-paths.js';
import { maxRequestHeadBytes, requestHeadTooLargeMessage } from './request-head.js';
import { boundHeadsInProgress } from './request-heads-in-progress.js';
import { addressBlock } from './request-info.js';

/**
 * The service's HTTP server: Node's, with settings of ours.
 *
 * - Kept-alive connections idle for 65 s: longer than any client's idle timeout (undici's is 4 s), so
 *   a client never reuses a connection the server is closing at that moment (ECONNRESET under load).
 * - Node's parser takes a request line and headers of up to 64 KB, four times the service's limit, so
 *   that a request over the limit reaches the request envelope and is refused there with 431 in its
 *   endpoint's shape (request-head.ts).
 * - Requests the parser itself refuses (over 64 KB, bytes that are not HTTP/1.1) get a JSON error
 *   instead of Node's empty answer: our JSON API's `{ error, message }` under its paths, RFC 6749's
 *   `{ error, error_description }` elsewhere (authorize is where long URLs come from).
 *
 * `basePath` is the issuer's path ('' or '/idp'), under which the service's paths are.
 */
export function createHttpServer(
  listener: http.RequestListener,
  basePath = '',
  options: { connectionsPerAddress?: number | undefined; connectionsInAll?: number | undefined } = {},
): http.Server {
  const server = http.createServer({ maxHeaderSize: 4 * maxRequestHeadBytes }, listener);
  server.keepAliveTimeout = 65_000;
  server.on('clientError', (error: NodeJS.ErrnoException & { rawPacket?: Buffer }, socket: Duplex) =>
    answerUnparsableRequest(error, socket, basePath),
  );
  if (options.connectionsPerAddress !== undefined) {
    boundConnectionsPerAddress(server, options.connectionsPerAddress);
  }
  if (options.connectionsInAll !== undefined) boundConnectionsInAll(server, options.connectionsInAll);
  // Heads still arriving cost heap before any request exists to count (request-heads-in-progress.ts).
  boundHeadsInProgress(server);
  return server;
}

/**
 * Connections one peer address may hold open at once (a reverse proxy is one peer: behind
 * TRUST_PROXY, src/run-service.ts sets no bound and the proxies are the ones to bound their clients).
 * A connection costs a file descriptor until its request head arrives (Node waits 60 s for it), and
 * there are as many as the process's limit: one client that opened ~20,000 connections and sent each
 * a few bytes of a request head took every descriptor, and nobody else could connect, nor the database
 * pool reconnect. Enough for a network of many browsers behind one address (each keeps a few).
 */
export const connectionsPerAddress = 1024;

function boundConnectionsPerAddress(server: http.Server, bound: number): void {
  const open = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const address = addressBlock(socket.remoteAddress ?? '');
    const held = open.get(address) ?? 0;
    if (held >= bound) {
      socket.destroy();
      return;
    }
    open.set(address, held + 1);
    socket.once('close', () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left > 0) open.set(address, left);
      else open.delete(address);
    });
  });
}

/**
 * Connections the process holds open at once, from every address together. The bound per address
 * alone let twenty addresses (an IPv6 host has every /64 of its /48 to choose from), 1,024
 * connections each sending a few bytes of a head, take every file descriptor of a process allowed
 * 20,000, and nobody else could connect. The process needs a descriptor limit above this one
 * (`ulimit -n`), with room for the database's connections and its files.
 */
export const connectionsInAll = 8_192;

/**
 * At the bound, a newcomer takes the place of the connection open longest that serves no request
 * (its head still arriving, or idle between requests): what a flood holds goes first, whoever sends
 * it, and a request being answered is never cut. When every connection serves one, the newcomer is
 * closed. A kept-alive connection closed this way is opened again by its client at its next request.
 */
function boundConnectionsInAll(server: http.Server, bound: number): void {
  // In the order they opened: the first that serves no request is the one open longest.
  const open = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    if (socket.destroyed) return; // closed by the bound per address
    if (open.size >= bound) {
      let idle: Socket | undefined;
      for (const held of open) {
        if (!servesARequest(held)) {
          idle = held;
          break;
        }
      }
      if (!idle) {
        socket.destroy();
        return;
      }
      open.delete(idle);
      idle.destroy();
    }
    open.add(socket);
    socket.once('close', () => open.delete(socket));
  });
}

/** Whether a request of the connection is being answered (Node attaches its response to the socket). */
function servesARequest(socket: Socket): boolean {
  return (socket as { _httpMessage?: unknown })._httpMessage != null;
}

const refusals: Record<string, { status: number; error: string; description: string }> = {
  HPE_HEADER_OVERFLOW: {
    status: 431,
    error: 'request_header_fields_too_large',
    description: requestHeadTooLargeMessage,
  },
  ERR_HTTP_REQUEST_TIMEOUT: {
    status: 408,
    error: 'request_timeout',
    description: 'The request did not arrive in time.',
  },
};

const notHttp = { status: 400, error: 'invalid_request', description: 'The request is not valid HTTP/1.1.' };

function answerUnparsableRequest(
  error: NodeJS.ErrnoException & { rawPacket?: Buffer },
  socket: Duplex,
  basePath: string,
): void {
  // As Node's own answer: never on a reset connection, nor into a response already being sent
  // (a refused request pipelined behind one in flight).
  const inFlight = (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (error.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  const refusal = refusals[error.code ?? ''] ?? notHttp;
  // The path, when the bytes the parser was reading begin with the request line.
  const path = /^[A-Z]+ (\/[^ ?]*)/.exec(error.rawPacket?.subarray(0, 2048).toString('latin1') ?? '')?.[1];
  const json = path?.startsWith(basePath) && isJsonApiPath(path.slice(basePath.length));
  const body = JSON.stringify(
    json
      ? { error: refusal.error, message: refusal.description }
      : { error: refusal.error, error_description: refusal.description },
  );
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
