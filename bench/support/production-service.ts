import crypto from 'node:crypto';
import fs from 'node:fs';
import { generateRsaPrivateKeyPem } from '../../src/keys/development-secrets.js';

/**
 * How `npm start` runs the service (package.json): its environment assignments and node flags, so a
 * bench measures the production process (compiled, NODE_ENV=production), not the TypeScript loader.
 */
export function startScript(packageJsonPath = 'package.json'): {
  environment: Record<string, string>;
  nodeFlags: string[];
} {
  const packageJson = JSON.parse(fs.readFileSync(packageJsonPath, 'utf8')) as { scripts: { start: string } };
  const command = /&&\s*((?:\w+=\S+\s+)*)exec node\s+(.*?)\s*dist\/src\/main\.js/.exec(
    packageJson.scripts.start,
  );
  if (!command) throw new Error(`the benches can't read the start script: ${packageJson.scripts.start}`);
  const environment = Object.fromEntries(
    command[1]!
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      // At the first `=`: a value may hold more (GLIBC_TUNABLES=glibc.malloc.hugetlb=1:...).
      .map((assignment) => [
        assignment.slice(0, assignment.indexOf('=')),
        assignment.slice(assignment.indexOf('=') + 1),
      ]),
  );
  return { environment, nodeFlags: command[2]!.split(/\s+/).filter(Boolean) };
}

/**
 * What production mode requires of the environment beyond the database and the address: signing keys
 * and cookie keys made up for the run, and a real email transport (`smtpUrl`: a relay that accepts
 * everything, bench/support/smtp-sink.ts, or an address nothing listens on when nothing is sent).
 */
export function productionSecrets(smtpUrl: string): Record<string, string> {
  return {
    NODE_ENV: 'production',
    OIDC_PRIVATE_KEY: generateRsaPrivateKeyPem(),
    MAIN_AUTH_PRIVATE_KEY: generateRsaPrivateKeyPem(),
    COOKIE_KEYS: crypto.randomBytes(32).toString('base64url'),
    EMAIL_TRANSPORT: 'smtp',
    SMTP_URL: smtpUrl,
    MAIL_FROM: 'bench@example.com',
  };
}
