import pg from 'pg';
import { describe, expect, it } from 'vitest';
import '../../src/db/database.js';
import '../../src/index.js';

describe('loading the service', () => {
  it("leaves pg's global type parsers alone: a host's own pg pools keep int8 as a string", () => {
    expect(pg.types.getTypeParser(pg.types.builtins.INT8, 'text')('9007199254740993')).toBe(
      '9007199254740993',
    );
  });
});
