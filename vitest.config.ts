import fs from 'node:fs';
import os from 'node:os';
import { defineConfig } from 'vitest/config';

/**
 * Some suites need something a laptop may not have. They are whole files, included where what they
 * need exists; CI (.ci/run) has all three, so everything runs there:
 * - *.postgres.test.ts: a PostgreSQL server (DATABASE_URL): other processes, LISTEN/NOTIFY, crashes;
 * - *.nats.test.ts: a NATS JetStream server (NATS_URL); *.nats.postgres.test.ts: both;
 * - *.browser.test.ts: Debian's chromium (CHROMIUM_PATH, default /usr/bin/chromium).
 */
const needs = [
  { files: 'test/**/*.postgres.test.ts', present: Boolean(process.env.DATABASE_URL), what: 'DATABASE_URL' },
  { files: 'test/**/*.nats.test.ts', present: Boolean(process.env.NATS_URL), what: 'NATS_URL' },
  {
    files: 'test/**/*.nats.postgres.test.ts',
    present: Boolean(process.env.NATS_URL && process.env.DATABASE_URL),
    what: 'NATS_URL and DATABASE_URL',
  },
  {
    files: 'test/**/*.browser.test.ts',
    present: fs.existsSync(process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'),
    what: 'chromium (apt install chromium)',
  },
];
const missing = needs.filter((need) => !need.present);
if (missing.length > 0 && !process.env.VITEST_WORKER_ID) {
  console.warn(
    `Not run here (they need ${missing.map((need) => need.what).join(', ')}): ${missing.map((need) => need.files).join(', ')}`,
  );
}

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['**/node_modules/**', ...missing.map((need) => need.files)],
    globalSetup: ['test/support/global-setup.ts'],
    pool: 'forks',
    // A worker loads the module graph (koa, oidc-provider, the service) once for all its files instead
    // of once per file: import was most of a small file's time. Files still get a database and a
    // service of their own; what modules keep (keys, hashes of fixture passwords) is per process anyway.
    isolate: false,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Each test file gets a database of its own, so files run in parallel: one worker more than there
    // are cores (much of a file's time is spent waiting on PostgreSQL, child processes and chromium: on
    // 2 cores, 3 workers took the PGlite suite from 4.2 to 3.2 min), at most four: a worker holds up to
    // ~15 PostgreSQL connections, and a default server allows 100.
    fileParallelism: true,
    maxWorkers: Math.min(4, Math.max(2, os.availableParallelism() + 1)),
  },
});
