import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../../support/free-port.js';

const binary = process.env.NATS_SERVER_BIN ?? 'nats-server';

/**
 * A NATS JetStream server of the test's own (a free port, its store in a temporary directory), so a test
 * can stop it and start it again on the same store without touching the shared one.
 */
export class OwnNats {
  #process: ChildProcess | undefined;

  private constructor(
    readonly port: number,
    readonly directory: string,
    /** More nats-server arguments, e.g. --user and --pass. */
    readonly args: string[] = [],
  ) {}

  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  static async create(args: string[] = []): Promise<OwnNats> {
    const server = new OwnNats(
      await freePort(),
      fs.mkdtempSync(path.join(os.tmpdir(), 'idp-own-nats-')),
      args,
    );
    await server.start();
    return server;
  }

  async start(): Promise<void> {
    const child = spawn(
      binary,
      ['-a', '127.0.0.1', '-p', String(this.port), '-js', '-sd', this.directory, ...this.args],
      {
        stdio: 'ignore',
      },
    );
    this.#process = child;
    const deadline = Date.now() + 15_000;
    while (!(await accepts(this.port))) {
      if (child.exitCode !== null) throw new Error(`nats-server exited with ${child.exitCode}`);
      if (Date.now() > deadline) throw new Error('nats-server did not start');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /** Stops the server (its store stays for the next start). */
  async stop(): Promise<void> {
    const child = this.#process;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  }

  async destroy(): Promise<void> {
    await this.stop();
    fs.rmSync(this.directory, { recursive: true, force: true });
  }
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
