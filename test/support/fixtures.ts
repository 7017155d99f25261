import crypto from 'node:crypto';
import type { Database } from '../../src/db/database.js';
import { grantRole } from '../../src/identity/access/user-access.js';
import { savePasswordHash } from '../../src/identity/passwords/password-credential.js';
import { hashPassword } from '../../src/identity/passwords/password-hash.js';
import { insertUser, type NewUser, type User } from '../../src/identity/users/user.js';
import { createClient, type NewClient } from '../../src/oidc/models/oauth-client.js';
import { testPasswordHashing } from './test-service.js';

export const defaultPassword = 'correct horse battery staple';

export function uniqueEmail(label = 'user'): string {
  return `${label}-${crypto.randomBytes(5).toString('hex')}@example.com`;
}

export function uniquePhone(): string {
  return `+1555${crypto.randomInt(1_000_000, 9_999_999)}`;
}

const passwordHashes = new Map<string, Promise<string>>();

/**
 * A real argon2id hash of `password` at the test services' parameters (testPasswordHashing), made once
 * per test process: a fixture's users differ in salt only, which no test of theirs is about (tests of
 * hashing itself call hashPassword). A hash is checked at the parameters it was made with.
 */
function fixturePasswordHash(password: string): Promise<string> {
  let hash = passwordHashes.get(password);
  if (!hash) {
    hash = hashPassword(password, testPasswordHashing);
    passwordHashes.set(password, hash);
  }
  return hash;
}

export async function createTestUser(
  db: Database,
  user: NewUser & { password?: string | null; roles?: string[] } = {},
): Promise<User & { password: string }> {
  const { password = defaultPassword, roles = [], ...fields } = user;
  const created = await insertUser(db, {
    email: 'email' in fields ? fields.email : uniqueEmail(),
    emailVerified: true,
    ...fields,
  });
  if (password !== null)
    await savePasswordHash(db, created.id, await fixturePasswordHash(password), new Date());
  for (const role of roles) await grantRole(db, created.id, role);
  return { ...created, password: password ?? '' };
}

export const callbackUri = 'http://localhost:8080/callback';

export async function createTestClient(db: Database, client: Partial<NewClient> = {}) {
  return createClient(db, {
    name: 'Test application',
    type: 'public',
    redirectUris: [callbackUri],
    scopes: ['openid', 'profile', 'email', 'phone', 'organizations', 'roles'],
    ...client,
  });
}

export async function createServiceClient(db: Database, scopes: string[]) {
  return createClient(db, {
    name: 'Test service',
    type: 'confidential',
    grantTypes: ['client_credentials'],
    scopes,
  });
}

/**
 * Sets the rows' created_at one second apart, in the given order, the last a second ago. The embedded
 * database reads the clock in milliseconds, so rows inserted one after the other may share created_at,
 * and a test of "newest first" or "oldest first" would then test the tie-break.
 */
export async function createdInOrder(
  db: Database,
  table: 'users' | 'oauth_clients',
  rows: Record<string, string>[],
): Promise<void> {
  const now = Date.now();
  for (const [index, row] of rows.entries()) {
    await db(table)
      .where(row)
      .update({ created_at: new Date(now - (rows.length - index) * 1000) });
  }
}
