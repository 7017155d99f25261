import type { IncomingMessage } from 'node:http';

/**
 * Reads a request's body, with a Content-Length or chunked, and puts the bytes back into the stream:
 * whoever reads the body next (the engine, a body parser) reads exactly what it would have read, and
 * enforces its own limits. Answers the body, or undefined when it is longer than `limit` bytes or the
 * request ended before its body did.
 *
 * The stream is read only as far as what it has buffered (`read(readableLength)`): reading past the
 * last byte would make it emit 'end', and a stream that ended can't take its bytes back.
 */
export async function peekRequestBody(request: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let received = 0;
  while (received <= limit && !request.destroyed) {
    if (request.readableLength > 0) {
      const chunk = request.read(request.readableLength) as Buffer;
      chunks.push(chunk);
      received += chunk.length;
    } else if (request.complete) {
      break;
    } else {
      await moreOfTheBody(request);
    }
  }
  const body = Buffer.concat(chunks, received);
  if (received > 0 && !request.destroyed) request.unshift(body);
  return received <= limit && request.complete ? body : undefined;
}

/** Until more of the body is buffered, or the request is complete or gone. */
function moreOfTheBody(request: IncomingMessage): Promise<void> {
  return new Promise((resolve) => {
    const settle = () => {
      request.off('readable', settle);
      request.off('close', settle);
      request.off('error', settle);
      resolve();
    };
    request.on('readable', settle);
    request.on('close', settle);
    request.on('error', settle);
  });
}
