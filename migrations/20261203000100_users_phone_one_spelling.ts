import { parsePhoneNumberFromString } from 'libphonenumber-js';
import type { Knex } from 'knex';

/**
 * Phones are stored in one spelling: a number written with `+` now gets its E.164 form when it is a
 * valid number (`+789161234567`, a trunk prefix after the country code, is `+79161234567`). Accounts
 * stored in another spelling would no longer be found by their phone, so theirs is rewritten, unless
 * another account already has the canonical spelling (then both stay as they are: the owner of the
 * phone proves it with a code to either). In pages of 1,000 accounts, by id.
 */
export async function up(db: Knex): Promise<void> {
  for (let after = ''; ;) {
    const rows: { id: string; phone: string }[] = await db('users')
      .whereNotNull('phone')
      .where('id', '>', after || '00000000-0000-0000-0000-000000000000')
      .orderBy('id')
      .limit(1000)
      .select('id', 'phone');
    if (rows.length === 0) return;
    after = rows.at(-1)!.id;
    for (const row of rows) {
      const parsed = parsePhoneNumberFromString(row.phone);
      if (!parsed?.isValid() || parsed.number === row.phone) continue;
      const taken = await db('users').where({ phone: parsed.number }).first('id');
      if (!taken) await db('users').where({ id: row.id }).update({ phone: parsed.number });
    }
  }
}

/** Nothing to undo: the canonical spelling is the same number. */
export async function down(): Promise<void> {}
