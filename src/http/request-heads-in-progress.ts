import type http from 'node:http';
import type { Socket } from 'node:net';

/**
 * The bytes of request heads still arriving that the process holds at once, from every connection
 * together. Node's parser hands a head's headers to JavaScript 32 at a time while it is still
 * arriving, a string for every name and value, and keeps them until the head ends or its 60 s run
 * out: a head of 60 kB in 1,400 short headers held ~150 kB of heap. The bounds on connections
 * (1,024 per address, 8,192 in all) let one address hold 1,000 such heads, and `npm start`'s 160 MB
 * heap ran out: the process died, for everyone. 16 MB of heads is ~40 MB of heap at that ratio; a
 * browser's head (a few kB, arriving at once) never waits long enough to be counted.
 */
export const headBytesInProgress = 16 * 1024 * 1024;

/** How often the connections are looked at: what arrives in between is the bound's slack. */
const sweepMilliseconds = 100;

/**
 * Over the bound, the connections with the most bytes of an unfinished head are closed first (a flood
 * sends the longest heads; a slow client's short head is left to finish), until the rest fit. A
 * connection serving a request is never cut; the bytes it receives after its answer was sent (the next
 * request's head) count. Node's parser reads the socket without JavaScript seeing the bytes, so the
 * connections are looked at every 100 ms (`socket.bytesRead`).
 */
export function boundHeadsInProgress(server: http.Server, bound = headBytesInProgress): void {
  // Each open connection, and its bytes read when its last answer was sent (0 before any request).
  const open = new Map<Socket, number>();
  server.on('connection', (socket: Socket) => {
    if (socket.destroyed) return; // closed by another bound
    open.set(socket, 0);
    socket.once('close', () => open.delete(socket));
  });
  server.on('request', (request: http.IncomingMessage, response: http.ServerResponse) => {
    const socket = request.socket as Socket;
    response.once('finish', () => {
      if (open.has(socket)) open.set(socket, socket.bytesRead);
    });
  });
  const sweep = setInterval(() => {
    let total = 0;
    const arriving: { socket: Socket; bytes: number }[] = [];
    for (const [socket, answeredAt] of open) {
      if (servesARequest(socket)) continue;
      const bytes = socket.bytesRead - answeredAt;
      if (bytes <= 0) continue;
      total += bytes;
      arriving.push({ socket, bytes });
    }
    if (total <= bound) return;
    arriving.sort((a, b) => b.bytes - a.bytes);
    for (const { socket, bytes } of arriving) {
      if (total <= bound) break;
      open.delete(socket);
      socket.destroy();
      total -= bytes;
    }
  }, sweepMilliseconds);
  sweep.unref();
  server.once('close', () => clearInterval(sweep));
}

/** Whether a request of the connection is being answered (Node attaches its response to the socket). */
function servesARequest(socket: Socket): boolean {
  return (socket as { _httpMessage?: unknown })._httpMessage != null;
}
