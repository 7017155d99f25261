import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import { generateRsaPrivateKeyPem } from '../../../src/keys/development-secrets.js';
import { repositoryRoot } from '../../support/run-process.js';
import { freePort } from '../../support/free-port.js';

/**
 * The service as `npm start` runs it, in a process of its own that a test can kill -9 and start again at
 * the same issuer, with the same keys and database.
 */
export class ServiceProcess {
  #child: ChildProcess | undefined;
  output = '';
  readonly issuer: string;
  readonly env: Record<string, string>;

  private constructor(
    readonly port: number,
    env: Record<string, string>,
  ) {
    this.issuer = `http://127.0.0.1:${port}`;
    this.env = {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      PORT: String(port),
      HOST: '127.0.0.1',
      ISSUER: this.issuer,
      OIDC_PRIVATE_KEY: generateRsaPrivateKeyPem(),
      MAIN_AUTH_PRIVATE_KEY: generateRsaPrivateKeyPem(),
      COOKIE_KEYS: crypto.randomBytes(32).toString('base64url'),
      DATA_DIR: fs.mkdtempSync('/tmp/idp-fault-'),
      LOG_LEVEL: 'info',
      ...env,
    };
  }

  static async start(env: Record<string, string>): Promise<ServiceProcess> {
    const service = new ServiceProcess(await freePort(), env);
    await service.restart();
    return service;
  }

  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /** Starts the process (again); resolves once it listens. */
  async restart(): Promise<void> {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      cwd: repositoryRoot,
      env: this.env,
    });
    this.#child = child;
    const started = this.output.length;
    const collect = (chunk: Buffer) => (this.output += chunk.toString());
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    let exited: Error | undefined;
    child.once('exit', (code, signal) => {
      exited = new Error(`the service exited (${code ?? signal}):\n${this.output.slice(started)}`);
    });
    // Ready once discovery answers (the supervisor of HTTP_WORKERS answers through its first worker).
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (exited && this.#child === child) throw exited;
      try {
        const response = await fetch(this.url('/.well-known/openid-configuration'), {
          signal: AbortSignal.timeout(2_000),
        });
        await response.body?.cancel();
        if (response.status === 200) return;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) {
        child.kill('SIGKILL'); // never leave a half-started service behind
        throw new Error(`the service did not start:\n${this.output.slice(started)}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /** kill -9: no drain, no shutdown hook; in-flight requests and transactions are cut where they are. */
  async kill(): Promise<void> {
    const child = this.#child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const children = this.childPids();
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    for (const pid of children) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await exited;
  }

  /** The processes the service started (cluster workers). */
  childPids(): number[] {
    const pid = this.#child?.pid;
    if (!pid) return [];
    try {
      return fs
        .readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
        .trim()
        .split(/\s+/)
        .filter(Boolean)
        .map(Number);
    } catch {
      return [];
    }
  }

  url(path: string): string {
    return `${this.issuer}${path}`;
  }
}
