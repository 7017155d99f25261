import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { DatabaseHandle } from '../../src/db/database.js';
import {
  clearSetting,
  defineSetting,
  readSetting,
  writeSetting,
} from '../../src/platform/settings/platform-settings.js';
import { createTestDatabase } from '../support/database.js';

let database: DatabaseHandle;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(() => database?.close());

const setting = defineSetting('test.limits', z.object({ max: z.number().int() }), { max: 3 });

describe('platform settings (where allowedMethods and the terms are read from)', () => {
  it('answers the default until a value is written, then the value, then the default again', async () => {
    expect(await readSetting(database.db, setting)).toEqual({ max: 3 });
    await writeSetting(database.db, setting, { max: 7 }, new Date());
    expect(await readSetting(database.db, setting)).toEqual({ max: 7 });
    await writeSetting(database.db, setting, { max: 8 }, new Date());
    expect(await readSetting(database.db, setting)).toEqual({ max: 8 });
    await clearSetting(database.db, setting);
    expect(await readSetting(database.db, setting)).toEqual({ max: 3 });
  });

  it('refuses to write a value outside the schema and reports a stored one that no longer fits', async () => {
    await expect(writeSetting(database.db, setting, { max: 'many' } as never, new Date())).rejects.toThrow();
    await database.db('platform_settings').insert({ key: setting.key, value: JSON.stringify({ max: 'x' }) });
    await expect(readSetting(database.db, setting)).rejects.toThrow(/test.limits holds an invalid value/);
  });
});
