/**
 * npm run bench: every speed target of the service as a ratio to its floor or ceiling measured in the
 * same run, with pass/fail. Runs, one after the other, bench/oauth.ts (client_credentials, refresh and
 * introspection against a bare oidc-provider), bench/platform-reference-data.ts (GET /subjects against a
 * bare node:http server), bench/login.ts (full logins against the argon2id bound) and bench/embedded.ts
 * (PGlite: memory and first start), each with its own output, then prints all their target rows in one
 * table. Needs DATABASE_URL (PostgreSQL; each script works in a scratch database of its own).
 * BENCH_SUITES=oauth,login runs some of them.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { machineLine, ratioTable, type FloorRatio } from './support/floor-ratios.js';

const suites = [
  { name: 'oauth', script: 'bench/oauth.ts' },
  { name: 'platform', script: 'bench/platform-reference-data.ts' },
  { name: 'login', script: 'bench/login.ts' },
  { name: 'embedded', script: 'bench/embedded.ts' },
];
const chosen = process.env.BENCH_SUITES?.split(',');
if (!process.env.DATABASE_URL) {
  console.error(
    'npm run bench needs DATABASE_URL (a PostgreSQL server; each bench creates its own database).',
  );
  process.exit(2);
}

const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'idp-bench-ratios-'));
const ratiosFile = path.join(directory, 'ratios.jsonl');
const failed: string[] = [];
for (const suite of suites.filter((candidate) => !chosen || chosen.includes(candidate.name))) {
  console.log(`\n## ${suite.name} (${suite.script})\n`);
  const result = spawnSync(process.execPath, ['--import', 'tsx', suite.script], {
    stdio: 'inherit',
    env: { ...process.env, BENCH_RATIOS_FILE: ratiosFile },
  });
  if (result.status !== 0) failed.push(suite.name);
}
const rows: FloorRatio[] = fs.existsSync(ratiosFile)
  ? fs
      .readFileSync(ratiosFile, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as FloorRatio)
  : [];
fs.rmSync(directory, { recursive: true, force: true });

console.log(`\n## Every target, as measured in this run\n\n${machineLine()}\n\n${ratioTable(rows)}\n`);
const missed = rows.filter((row) => !row.met).length;
console.log(
  `${rows.length - missed} of ${rows.length} targets met${failed.length > 0 ? `; bench scripts that failed: ${failed.join(', ')}` : ''}.`,
);
// A missed target is a figure to read, not a broken bench: only a script that failed exits non-zero.
process.exitCode = failed.length > 0 ? 1 : 0;
