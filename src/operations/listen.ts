import type http from 'node:http';

/** Why a server could not listen, in one line for the operator (no stack: it is not a bug). */
export class ListenError extends Error {
  override name = 'ListenError';
}

const explanations: Record<string, (where: string) => string> = {
  EADDRINUSE: (where) => `${where} is already in use (another process listens there; set PORT or HOST)`,
  EACCES: (where) => `${where} needs privileges this process doesn't have (use a port above 1023)`,
  EADDRNOTAVAIL: (where) => `${where}: this machine has no such address (check HOST)`,
};

/** Starts listening; a failure rejects with a ListenError that says what to change. */
export function listen(server: http.Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException) => {
      const where = `${host}:${port}`;
      const explain = error.code ? explanations[error.code] : undefined;
      reject(new ListenError(explain ? explain(where) : `cannot listen on ${where}: ${error.message}`));
    };
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve();
    });
  });
}
