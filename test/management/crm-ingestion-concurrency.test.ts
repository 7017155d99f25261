import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { openDatabase, type DatabaseHandle } from '../../src/db/database.js';
import { chaoticDelivery } from '../../src/management/crm-simulator/crm-delivery.js';
import { generateCrmHistory } from '../../src/management/crm-simulator/crm-world.js';
import { ingestCrmMessages } from '../../src/management/ingestion/ingest-crm-messages.js';
import { createTestDatabase, onPostgres } from '../support/database.js';
import {
  allTimeTotalsAgainstDaily,
  figuresOf,
  groundTruth,
  storedTotals,
  totalsRebuiltFromRecords,
} from './support/crm-fixtures.js';

// On PostgreSQL: batches from two connection pools (two nodes) at once, as a shared durable consumer
// hands them out. On PGlite the same test runs serialised.
let database: DatabaseHandle & { url?: string };
let other: DatabaseHandle;
beforeAll(async () => {
  database = await createTestDatabase();
  other = onPostgres ? await openDatabase({ databaseUrl: database.url!, poolMax: 4 }) : database;
});
afterAll(async () => {
  if (other !== database) await other?.close();
  await database?.close();
});

describe('batches applied concurrently', () => {
  it('overlapping batches from two nodes at once (the same messages in several) end at the ground truth', async () => {
    const history = generateCrmHistory({ seed: 71, start: '2026-05-01', days: 31, leadsPerDay: 12 });
    const { texts } = chaoticDelivery(history, { seed: 72, copies: 3, shuffle: true });
    const batches: string[][] = [];
    for (let start = 0; start < texts.length; start += 100) batches.push(texts.slice(start, start + 100));
    const outcomes = await Promise.all(
      batches.map((batch, index) =>
        ingestCrmMessages({ db: (index % 2 === 0 ? database : other).db, clock: systemClock }, batch),
      ),
    );
    const sum = (field: 'applied' | 'superseded' | 'duplicate') =>
      outcomes.reduce((total, outcome) => total + outcome[field], 0);
    expect(sum('applied') + sum('superseded')).toBe(history.length);
    expect(sum('duplicate')).toBe(texts.length - history.length);
    const { consumer, crm } = await figuresOf(
      database.db,
      groundTruth(history),
      [{ from: '2026-05-01', to: '2026-06-01' }],
      ['2026-05'],
    );
    expect(consumer).toEqual(crm);
    expect(await storedTotals(database.db)).toEqual(await totalsRebuiltFromRecords(database.db));
    const { allTime, daily } = await allTimeTotalsAgainstDaily(database.db);
    expect(allTime).toEqual(daily);
  });
});
