import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../../support/free-port.js';

const run = promisify(execFile);
const binaries = process.env.PG_BIN ?? '/usr/lib/postgresql/15/bin';

/** PostgreSQL refuses to run as root: as root, the server's commands run as the `postgres` user. */
function asServerUser(command: string, args: string[]): [string, string[]] {
  const binary = path.join(binaries, command);
  return process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', binary, ...args]] : [binary, args];
}

export const ownPostgresAvailable = fs.existsSync(path.join(binaries, 'initdb'));

/**
 * A throwaway PostgreSQL cluster of the test's own (initdb in a temporary directory, a free port), so a
 * test can stop and restart the server without touching the one the other test files share.
 */
export class OwnPostgres {
  private constructor(
    readonly directory: string,
    readonly port: number,
  ) {}

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  static async create(): Promise<OwnPostgres> {
    const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'idp-own-pg-'));
    fs.chmodSync(directory, 0o777);
    const server = new OwnPostgres(directory, await freePort());
    if (process.getuid?.() === 0) await run('chown', ['postgres', directory]);
    await run(
      ...asServerUser('initdb', [
        '-D',
        path.join(directory, 'data'),
        '-U',
        'postgres',
        '--auth=trust',
        '--no-sync',
        '-E',
        'UTF8',
      ]),
    );
    await server.start();
    return server;
  }

  async start(): Promise<void> {
    await run(
      ...asServerUser('pg_ctl', [
        '-D',
        path.join(this.directory, 'data'),
        '-l',
        path.join(this.directory, 'server.log'),
        '-w',
        '-o',
        `-p ${this.port} -k ${this.directory} -c listen_addresses=127.0.0.1 -c fsync=off`,
        'start',
      ]),
    );
  }

  /** A fast shutdown: every connection is closed at once, as a restart or failover does. */
  async stop(): Promise<void> {
    await run(
      ...asServerUser('pg_ctl', ['-D', path.join(this.directory, 'data'), '-m', 'fast', '-w', 'stop']),
    );
  }

  async destroy(): Promise<void> {
    try {
      await run(
        ...asServerUser('pg_ctl', ['-D', path.join(this.directory, 'data'), '-m', 'immediate', '-w', 'stop']),
      );
    } catch {
      // not running
    }
    fs.rmSync(this.directory, { recursive: true, force: true });
  }
}
