import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScript } from '../../bench/support/production-service.js';
import { generateRsaPrivateKeyPem } from '../../src/keys/development-secrets.js';
import { freePort } from '../support/free-port.js';
import { newDataDirectory } from '../support/new-data-directory.js';
import { repositoryRoot } from '../support/run-process.js';

/**
 * Node's parser hands a request's headers to JavaScript 32 at a time while the head is still arriving,
 * as a string each for every name and value: a head of 60 kB in 1,400 short headers held ~150 kB of
 * heap until it ended or Node's 60 s for a head ran out. One address, 1,000 connections each sending
 * such a head and never its end, filled `npm start`'s 160 MB heap and the process died (V8's "heap out
 * of memory"), for everyone. The service runs here with `npm start`'s node flags (its 160 MB heap), from
 * the sources through tsx as the fault tests run it: a fresh clone has no compiled tree.
 */

let child: ChildProcess;
let issuer: string;
let port: number;
let output = '';

beforeAll(async () => {
  const { environment, nodeFlags } = startScript();
  port = await freePort();
  issuer = `http://127.0.0.1:${port}`;
  child = spawn(process.execPath, [...nodeFlags, '--import', 'tsx', 'src/main.ts'], {
    cwd: repositoryRoot,
    env: {
      ...environment,
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      PORT: String(port),
      HOST: '127.0.0.1',
      ISSUER: issuer,
      OIDC_PRIVATE_KEY: generateRsaPrivateKeyPem(),
      MAIN_AUTH_PRIVATE_KEY: generateRsaPrivateKeyPem(),
      COOKIE_KEYS: crypto.randomBytes(32).toString('base64url'),
      DATA_DIR: await newDataDirectory('idp-heads-'),
      LOG_LEVEL: 'warn',
    },
  });
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  // Through tsx, which takes more than 30 s on a busy CI machine without the seed a build has.
  const deadline = Date.now() + 100_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`the service exited:\n${output}`);
    try {
      const response = await fetch(`${issuer}/.well-known/openid-configuration`);
      await response.body?.cancel();
      if (response.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`the service did not start:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}, 110_000);

afterAll(() => {
  child?.kill('SIGKILL');
});

/** A request head of ~60 kB in ~1,400 headers (under Node's 64 kB), without the blank line that ends it. */
function unfinishedHead(): string {
  let head = 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n';
  for (let i = 0; head.length < 60_000; i++)
    head += `x-h${String(i).padStart(5, '0')}abcdefgh: v${i}abcdefghijklm\r\n`;
  return head;
}

describe('connections that never finish their request head', () => {
  it("don't fill the heap: the process lives on and answers others", async () => {
    const head = unfinishedHead();
    const pid = child.pid;
    const sockets: net.Socket[] = [];
    // From three addresses of the loopback network, 1,000 connections each (under 1,024 per address),
    // for 5 s: a connection the service closes is opened again.
    const open = (i: number) => {
      const socket = net.connect({ port, host: '127.0.0.1', localAddress: `127.0.0.${2 + (i % 3)}` });
      socket.on('error', () => {});
      socket.write(head);
      sockets[i] = socket;
    };
    for (let i = 0; i < 3000; i++) {
      open(i);
      if (i % 100 === 99) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const until = Date.now() + 5_000;
    while (Date.now() < until && child.exitCode === null && child.signalCode === null) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      for (let i = 0; i < sockets.length; i++) if (sockets[i]!.destroyed) open(i);
    }
    try {
      expect(child.exitCode ?? child.signalCode, output.slice(-2000)).toBeNull();
      expect(child.pid).toBe(pid);
      const response = await fetch(`${issuer}/.well-known/openid-configuration`, {
        signal: AbortSignal.timeout(10_000),
      });
      expect(response.status).toBe(200);
      await response.body?.cancel();
    } finally {
      for (const socket of sockets) socket.destroy();
    }
  }, 60_000);
});
