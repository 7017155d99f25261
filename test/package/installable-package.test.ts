import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * The package as a user gets it: `npm pack` (which builds dist/ through prepack), the tarball unpacked
 * into a fresh project's node_modules, and plain `node` (no tsx, no TypeScript loader) importing it.
 * The package's dependencies are linked from this checkout's node_modules instead of downloaded (CI
 * may be offline); only `dependencies` are linked, so code needing a devDependency fails here.
 */

const run = promisify(execFile);
const repository = path.resolve(import.meta.dirname, '../..');
let project: string;

async function node(script: string, args: string[] = [], env: Record<string, string> = {}) {
  return run(process.execPath, [script, ...args], {
    cwd: project,
    env: { PATH: process.env.PATH ?? '', ...env },
    timeout: 120_000,
  });
}

beforeAll(async () => {
  project = await fs.mkdtemp(path.join(os.tmpdir(), 'identity-service-consumer-'));
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', project], {
    cwd: repository,
    timeout: 280_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  const [packed] = JSON.parse(stdout.slice(stdout.indexOf('['))) as { filename: string }[];
  const installed = path.join(project, 'node_modules', 'identity-service');
  await fs.mkdir(installed, { recursive: true });
  await run('tar', ['-xzf', path.join(project, packed!.filename), '-C', installed, '--strip-components=1']);
  const manifest = JSON.parse(await fs.readFile(path.join(installed, 'package.json'), 'utf8')) as {
    dependencies: Record<string, string>;
  };
  // The consumer's own TypeScript setup: @types/node, as any Node project has.
  for (const dependency of [...Object.keys(manifest.dependencies), '@types/node']) {
    const link = path.join(project, 'node_modules', dependency);
    await fs.mkdir(path.dirname(link), { recursive: true });
    await fs.symlink(path.join(repository, 'node_modules', dependency), link);
  }
  await fs.writeFile(
    path.join(project, 'package.json'),
    JSON.stringify({ name: 'consumer', private: true, type: 'module' }),
  );
}, 300_000);

afterAll(async () => {
  if (project) await fs.rm(project, { recursive: true, force: true });
});

// The checks below only read the unpacked package and write files of their own into the consumer
// project, each running its own processes: side by side, the slowest (tsc, a first PGlite start) sets
// the time instead of their sum.
describe.concurrent('the npm package', () => {
  it('starts a service from plain Node ESM: migrate, create, listen, answer discovery', async () => {
    await fs.writeFile(
      path.join(project, 'start.mjs'),
      `import http from 'node:http';
import { createIdentityService, generateRsaPrivateKeyPem, loadConfig, migrateToLatest, openDatabase } from 'identity-service';

const server = http.createServer();
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const issuer = 'http://127.0.0.1:' + server.address().port;
const database = await openDatabase({});
await migrateToLatest(database.db);
const service = await createIdentityService({
  config: loadConfig({ ISSUER: issuer, LOG_LEVEL: 'silent' }),
  database,
  secrets: {
    oidcPrivateKey: generateRsaPrivateKeyPem(),
    mainAuthPrivateKey: generateRsaPrivateKeyPem(),
    cookieKeys: ['consumer-cookie-key-0123456789abcdefghijklmnop'],
  },
});
server.on('request', service.app.callback());
const discovery = await (await fetch(issuer + '/.well-known/openid-configuration')).json();
console.log(JSON.stringify({ issuer, discovered: discovery.issuer, token: discovery.token_endpoint }));
server.close();
await service.close();
await database.close();
`,
    );
    const { stdout } = await node('start.mjs');
    const answer = JSON.parse(stdout) as { issuer: string; discovered: string; token: string };
    expect(answer.discovered).toBe(answer.issuer);
    expect(answer.token).toBe(`${answer.issuer}/oauth/token`);
  }, 150_000);

  it('platform-client loads without argon2, PGlite or knex; the main entry does load them', async () => {
    await fs.writeFile(
      path.join(project, 'record-resolutions.mjs'),
      `let port;
export function initialize(data) { port = data.port; }
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  port.postMessage(result.url);
  return result;
}
`,
    );
    const script = (entry: string) => `import { register } from 'node:module';
import { MessageChannel } from 'node:worker_threads';
const resolved = [];
const { port1, port2 } = new MessageChannel();
port1.on('message', (url) => resolved.push(url));
register('./record-resolutions.mjs', import.meta.url, { data: { port: port2 }, transferList: [port2] });
const entry = await import('${entry}');
await new Promise((resolve) => setTimeout(resolve, 100));
port1.close();
console.log(JSON.stringify({
  exports: Object.keys(entry),
  heavy: [...new Set(resolved.map((url) => url.match(/node_modules\\/((@[^/]+\\/)?[^/]+)/)?.[1]))]
    .filter((name) => ['argon2', '@electric-sql/pglite', 'knex', 'pg', 'oidc-provider'].includes(name)),
}));
`;
    await fs.writeFile(path.join(project, 'light.mjs'), script('identity-service/platform-client'));
    await fs.writeFile(path.join(project, 'heavy.mjs'), script('identity-service'));
    const light = JSON.parse((await node('light.mjs')).stdout) as { exports: string[]; heavy: string[] };
    expect(light.exports).toEqual(expect.arrayContaining(['ReferenceDataClient', 'serviceTokenProvider']));
    expect(light.heavy).toEqual([]);
    const heavy = JSON.parse((await node('heavy.mjs')).stdout) as { heavy: string[] };
    expect(heavy.heavy).toEqual(expect.arrayContaining(['argon2', '@electric-sql/pglite', 'knex']));
  }, 60_000);

  it('ships type declarations: a TypeScript consumer type-checks against them', async () => {
    await fs.writeFile(
      path.join(project, 'consumer.ts'),
      `import { ApiError, createIdentityService, type AuthFlowStep, type Transport } from 'identity-service';
import { ReferenceDataClient } from 'identity-service/platform-client';
import { z } from 'zod';

export const codeWord: AuthFlowStep<{ word: string }> = {
  id: 'code-word',
  input: z.object({ word: z.string() }),
  async run(_context, input) {
    if (input.word !== 'swordfish') throw new ApiError(400, 'wrong_word', 'That is not the word.');
    return {};
  },
};
export const carrierPigeon: Transport = { name: 'pigeon', label: 'Pigeon', channels: ['sms'], async send() {} };
export type Service = Awaited<ReturnType<typeof createIdentityService>>;
export const port: number = (null as unknown as Service).config.port;
export type Client = ReferenceDataClient;
// @ts-expect-error the app is typed as Koa (its types ship with the package's dependencies)
(null as unknown as Service).app.noSuchMethod();
// @ts-expect-error the step's input is typed
export const wrong: AuthFlowStep<{ word: string }> = { ...codeWord, input: z.object({ word: z.number() }) };
`,
    );
    await fs.writeFile(
      path.join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          target: 'ES2023',
          strict: true,
          noEmit: true,
          skipLibCheck: true,
          types: ['node'],
        },
        files: ['consumer.ts'],
      }),
    );
    const tsc = path.join(repository, 'node_modules', 'typescript', 'bin', 'tsc');
    const result = await run(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: project }).catch(
      (error: { stdout: string }) => ({ stdout: error.stdout }),
    );
    expect(result.stdout).toBe('');
  }, 120_000);

  // Two node processes, alongside the other checks' tsc and PGlite: on a busy machine, more than 30 s.
  it('has a CLI bin that runs from dist', async () => {
    const installed = path.join(project, 'node_modules', 'identity-service');
    const manifest = JSON.parse(await fs.readFile(path.join(installed, 'package.json'), 'utf8')) as {
      bin: Record<string, string>;
    };
    const bin = path.join(installed, manifest.bin['identity-service']!);
    expect((await fs.readFile(bin, 'utf8')).startsWith('#!/usr/bin/env node')).toBe(true);
    const { stdout } = await node(bin, ['keys:generate'], { DATA_DIR: path.join(project, 'data') });
    expect(stdout).toContain('-----BEGIN PRIVATE KEY-----');
    // Its usage lines name the bin, not the repository's `npm run idp --`.
    const help = await node(bin, ['--help'], { DATA_DIR: path.join(project, 'data') });
    expect(help.stderr).toMatch(/^usage: identity-service <command> \[options\]$/m);
  }, 60_000);
});
