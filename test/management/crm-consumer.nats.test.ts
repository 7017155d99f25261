import { afterAll, describe, expect, it } from 'vitest';
import { listAuditEvents } from '../../src/identity/audit/audit-log.js';
import { chaoticDelivery } from '../../src/management/crm-simulator/crm-delivery.js';
import { generateCrmHistory } from '../../src/management/crm-simulator/crm-world.js';
import { listDeadLetters } from '../../src/management/ingestion/dead-letters.js';
import { crmIntegrationErrorType } from '../../src/management/ingestion/integration-errors.js';
import { deleteStream } from '../events/support/nats-test-stream.js';
import { startTestService } from '../support/test-service.js';
import { figuresOf, groundTruth, storedTotals, totalsRebuiltFromRecords } from './support/crm-fixtures.js';
import { crmNatsEnvironment, crmPublisher, drained } from './support/crm-nats.js';

// Against the real NATS JetStream server (NATS_URL): the service's own consumer, durable, acked.
const streams: string[] = [];
afterAll(async () => {
  for (const stream of streams) await deleteStream(stream);
});

describe('the management consumer on NATS JetStream', { timeout: 90_000 }, () => {
  it('ends at the ground truth from 3 copies of every event, shuffled, with poison and broken JSON', async () => {
    const environment = crmNatsEnvironment();
    streams.push(environment.NATS_STREAM, environment.NATS_MANAGEMENT_STREAM);
    const history = generateCrmHistory({ seed: 31, start: '2026-01-01', days: 40, leadsPerDay: 12 });
    const delivery = chaoticDelivery(history, {
      seed: 32,
      copies: 3,
      shuffle: true,
      unknownStatuses: 3,
      missingIds: 4,
      paymentPii: 2,
      malformed: 2,
    });
    const publisher = await crmPublisher(environment);
    const svc = await startTestService({ env: environment });
    try {
      await publisher.publish(delivery.texts);
      await drained(environment);

      const periods = [
        { from: '2026-01-01', to: '2026-02-01' },
        { from: '2026-01-15', to: '2026-02-10' },
      ];
      const { consumer, crm } = await figuresOf(svc.service.db, groundTruth(history), periods, ['2026-01']);
      expect(consumer).toEqual(crm);
      const deadLetters = await listDeadLetters(svc.service.db);
      expect(deadLetters.map((letter) => letter.messageId).sort()).toEqual(
        [...delivery.deadLetterIds].sort(),
      );
      const errors = await listAuditEvents(svc.service.db, { type: crmIntegrationErrorType, limit: 100 });
      expect(errors).toHaveLength(delivery.rejected);
      expect(errors.map((error) => error.details.reason)).toContain('malformed');
      const { rows } = await svc.service.db.raw('select count(*)::int as count from crm_events');
      expect(rows[0].count).toBe(history.length);
      expect(await storedTotals(svc.service.db)).toEqual(await totalsRebuiltFromRecords(svc.service.db));
    } finally {
      await svc.close();
      await publisher.close();
    }
  });

  it('two nodes on the same durable consumer: every message applied once between them', async () => {
    const environment = crmNatsEnvironment();
    streams.push(environment.NATS_STREAM, environment.NATS_MANAGEMENT_STREAM);
    const history = generateCrmHistory({ seed: 41, start: '2026-02-01', days: 30, leadsPerDay: 10 });
    const delivery = chaoticDelivery(history, { seed: 42, copies: 2, shuffle: true });
    const publisher = await crmPublisher(environment);
    const nodeA = await startTestService({ env: environment });
    const nodeB = await startTestService({ env: environment, database: nodeA.database });
    try {
      await publisher.publish(delivery.texts);
      await drained(environment);
      const { consumer, crm } = await figuresOf(
        nodeA.service.db,
        groundTruth(history),
        [{ from: '2026-02-01', to: '2026-03-01' }],
        ['2026-02'],
      );
      expect(consumer).toEqual(crm);
    } finally {
      await nodeB.close();
      await nodeA.close();
      await publisher.close();
    }
  });
});
