import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { up } from '../../migrations/20261203000100_users_phone_one_spelling.js';
import type { DatabaseHandle } from '../../src/db/database.js';
import { createTestDatabase } from '../support/database.js';
import { createTestUser } from '../support/fixtures.js';

let database: DatabaseHandle;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(() => database?.close());

describe('migration 20261203000100: one spelling per phone', () => {
  it('rewrites a valid number stored in another spelling, unless an account has the canonical one', async () => {
    const { db } = database;
    const phoneOf = async (id: string) => (await db('users').where({ id }).first('phone')).phone as string;
    const trunk = await createTestUser(db, { phone: '+789161234567' });
    const clash = await createTestUser(db, { phone: '+4901511234567' });
    const canonical = await createTestUser(db, { phone: '+491511234567' });
    const unknownPlan = await createTestUser(db, { phone: '+15550000000' });

    await up(db);
    expect(await phoneOf(trunk.id)).toBe('+79161234567');
    expect(await phoneOf(clash.id)).toBe('+4901511234567');
    expect(await phoneOf(canonical.id)).toBe('+491511234567');
    expect(await phoneOf(unknownPlan.id)).toBe('+15550000000');
  });
});
