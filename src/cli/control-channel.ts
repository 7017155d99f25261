import fs from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { z } from 'zod';

/**
 * The embedded database (PGlite) lives inside one process. That process listens on a Unix socket in
 * DATA_DIR; the socket is both the lock on the data directory (a second process can't listen on it)
 * and the way the CLI reaches a running service: the CLI sends its arguments and the service runs the
 * command on its own database. The socket file is created with mode 0600 (owner only).
 */
export const controlSocketName = 'control.sock';

export interface CommandResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** `invokedAs`: how the operator ran the CLI, for the usage lines (see invoked-as.ts). */
export type CommandHandler = (argv: string[], invokedAs?: string) => Promise<CommandResult>;

const commandRequestSchema = z.object({
  argv: z.array(z.string()).max(200),
  invokedAs: z.string().max(100).optional(),
});
const commandResultSchema = z.object({ exitCode: z.number().int(), stdout: z.string(), stderr: z.string() });

export class DataDirectoryInUse extends Error {
  constructor(readonly socketPath: string) {
    super(
      `the embedded database in ${path.dirname(socketPath)} is in use by another process; wait for it to finish or stop it, or set DATABASE_URL to use PostgreSQL`,
    );
    this.name = 'DataDirectoryInUse';
  }
}

export interface ControlChannel {
  socketPath: string;
  /** Start answering forwarded CLI commands. */
  serve(handler: CommandHandler): void;
  close(): Promise<void>;
}

export function controlSocketPath(dataDir: string): string {
  return path.join(dataDir, controlSocketName);
}

/**
 * What a serving process (`npm start`, `crm-sim --embedded`) does first on the embedded database: claim
 * DATA_DIR, or stop with exit code 1 and one line when another process has it. Nothing to claim on
 * PostgreSQL (`databaseUrl` set).
 */
export async function holdDataDirectory(config: {
  databaseUrl?: string | undefined;
  dataDir: string;
}): Promise<ControlChannel | undefined> {
  if (config.databaseUrl) return undefined;
  try {
    return await claimDataDirectory(config.dataDir);
  } catch (error) {
    if (!(error instanceof DataDirectoryInUse)) throw error;
    console.error(`Cannot start: ${error.message}.`);
    process.exit(1);
  }
}

/** Claims the data directory for this process; throws DataDirectoryInUse when another one has it. */
export async function claimDataDirectory(dataDir: string): Promise<ControlChannel> {
  await fs.mkdir(dataDir, { recursive: true });
  const socketPath = controlSocketPath(dataDir);
  let handler: CommandHandler | undefined;
  const server = http.createServer((request, response) => {
    void answer(request, response, handler);
  });
  try {
    await listen(server, socketPath);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error;
    if (await isAlive(socketPath)) throw new DataDirectoryInUse(socketPath);
    // A socket file left by a process that died: take it over.
    await fs.rm(socketPath, { force: true });
    await listen(server, socketPath);
  }
  await fs.chmod(socketPath, 0o600);
  return {
    socketPath,
    serve(next) {
      handler = next;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function answer(
  request: http.IncomingMessage,
  response: http.ServerResponse,
  handler?: CommandHandler,
) {
  const reply = (status: number, body: unknown) => {
    response.writeHead(status, { 'content-type': 'application/json' });
    response.end(JSON.stringify(body));
  };
  if (!handler) {
    return reply(503, {
      exitCode: 1,
      stdout: '',
      stderr: 'The embedded database is busy with another command; try again.\n',
    });
  }
  try {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const { argv, invokedAs } = commandRequestSchema.parse(
      JSON.parse(Buffer.concat(chunks).toString('utf8')),
    );
    reply(200, await handler(argv, invokedAs));
  } catch (error) {
    reply(400, { exitCode: 1, stdout: '', stderr: `${(error as Error).message}\n` });
  }
}

/** Runs a CLI command in the process that holds the data directory; undefined if none is running. */
export async function forwardCommand(
  dataDir: string,
  argv: string[],
  invokedAs?: string,
): Promise<CommandResult | undefined> {
  const socketPath = controlSocketPath(dataDir);
  try {
    await fs.access(socketPath);
  } catch {
    return undefined;
  }
  return new Promise((resolve, reject) => {
    const request = http.request(
      { socketPath, path: '/run', method: 'POST', headers: { 'content-type': 'application/json' } },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => {
          try {
            resolve(commandResultSchema.parse(JSON.parse(Buffer.concat(chunks).toString('utf8'))));
          } catch (error) {
            reject(error);
          }
        });
      },
    );
    request.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'ECONNREFUSED' || error.code === 'ENOENT') resolve(undefined);
      else reject(error);
    });
    request.end(JSON.stringify({ argv, invokedAs }));
  });
}

/**
 * The socket is created owner-only (umask 077 while listen() binds it, which it does before returning):
 * created with the process's umask and restricted afterwards, another local user could connect in
 * between and keep the connection. The chmod after listening stays for a socket file taken over.
 */
function listen(server: http.Server, socketPath: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (error: Error) => reject(error);
    server.once('error', onError);
    const umask = process.umask(0o077);
    try {
      server.listen(socketPath, () => {
        server.off('error', onError);
        resolve();
      });
    } finally {
      process.umask(umask);
    }
  });
}

function isAlive(socketPath: string): Promise<boolean> {
  return new Promise((resolve) => {
    const request = http.request({ socketPath, path: '/ping', method: 'GET', timeout: 2000 }, (response) => {
      response.resume();
      resolve(true);
    });
    request.on('error', () => resolve(false));
    request.on('timeout', () => {
      request.destroy();
      resolve(true);
    });
    request.end();
  });
}
