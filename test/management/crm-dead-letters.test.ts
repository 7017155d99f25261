import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { runCommand } from '../../src/cli/run-command.js';
import { crmEnvelopeOf } from '../../src/management/crm-contract/crm-envelope.js';
import { crmMessageTypes } from '../../src/management/crm-contract/crm-events.js';
import { createCrmEnvelope } from '../../src/management/crm-contract/index.js';
import { consumerSales } from '../../src/management/dashboards/consumer-figures.js';
import { contractRules, type CrmRules } from '../../src/management/ingestion/crm-rules.js';
import { findDeadLetter } from '../../src/management/ingestion/dead-letters.js';
import { setAsideUnprocessable } from '../../src/management/ingestion/ingest-crm-messages.js';
import { replayDeadLetters } from '../../src/management/ingestion/replay-dead-letters.js';
import { startTestService, type TestService } from '../support/test-service.js';
import { consumed, publishInProcess } from './support/crm-fixtures.js';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(() => svc?.close());

const partiallyPaid = (invoiceId: string) =>
  createCrmEnvelope(
    'crm.invoice.paid',
    {
      invoiceId,
      customerId: 'cus-9',
      dealId: null,
      amountMinor: 70_000,
      currency: 'CHF',
      issuedAt: '2025-09-01T08:00:00Z',
      dueAt: '2025-09-15T08:00:00Z',
      paidAt: '2025-09-03T08:00:00Z',
      status: 'partially_paid',
      version: 2,
    },
    { occurredAt: '2025-09-03T08:00:00Z' },
  );

/** A management that learned partially_paid: what a fix deploys. */
const fixedRules: CrmRules = {
  ...contractRules,
  entities: {
    ...contractRules.entities,
    invoice: { naturalKey: 'invoiceId', statuses: ['issued', 'paid', 'overdue', 'partially_paid'] },
  },
  messageTypes: {
    ...contractRules.messageTypes,
    'crm.invoice.paid': {
      entity: 'invoice',
      envelope: crmEnvelopeOf(
        'crm.invoice.paid',
        crmMessageTypes['crm.invoice.paid'].data.extend({ status: z.enum(['paid', 'partially_paid']) }),
      ),
    },
  },
};

const september = { from: '2025-09-01', to: '2025-10-01' };
const chf = async () =>
  (await consumerSales(svc.service.db, september, new Date())).currencies.find(
    (entry) => entry.currency === 'CHF',
  );
const cli = (...argv: string[]) =>
  runCommand(argv, async () => ({ db: svc.service.db, clock: svc.service.clock }));

describe('dead letters: inspect and replay after a fix', () => {
  it('replays a message the fixed rules accept: applied once, the totals follow, a redelivery is a duplicate', async () => {
    const message = partiallyPaid('inv-partial-1');
    await publishInProcess(svc, [message]);
    await consumed(svc);
    expect(await chf()).toBeUndefined();

    // Unfixed: it stays, with its reason.
    const unchanged = await replayDeadLetters(svc.service, { messageIds: [message.messageId] });
    expect(unchanged).toMatchObject([{ outcome: 'still_failing', reason: 'unknown_status' }]);
    expect(await chf()).toBeUndefined();

    const replayed = await replayDeadLetters(
      { ...svc.service, rules: fixedRules },
      { messageIds: [message.messageId] },
    );
    expect(replayed).toEqual([
      { messageId: message.messageId, messageType: 'crm.invoice.paid', outcome: 'applied' },
    ]);
    expect((await chf())?.invoicesIssued).toEqual({ count: 1, amountMinor: 70_000 });
    expect(await findDeadLetter(svc.service.db, message.messageId)).toMatchObject({
      replayOutcome: 'applied',
      timesSeen: 1,
    });
    expect((await findDeadLetter(svc.service.db, message.messageId))!.replayedAt).not.toBeNull();

    // crm delivers it once more: the event store has it now.
    await publishInProcess(svc, [message]);
    await consumed(svc);
    expect((await chf())?.invoicesIssued).toEqual({ count: 1, amountMinor: 70_000 });
    expect(await findDeadLetter(svc.service.db, message.messageId)).toMatchObject({ timesSeen: 1 });
    expect(await replayDeadLetters(svc.service, { messageIds: [message.messageId] })).toMatchObject([
      { outcome: 'already_replayed' },
    ]);
  });

  it('lists, shows and replays through the CLI (npm run idp -- crm:dead-letters:*)', async () => {
    const failed = createCrmEnvelope(
      'crm.refund.created',
      {
        refundId: 'ref-cli-1',
        paymentId: 'pay-cli-1',
        invoiceId: 'inv-cli-1',
        amountMinor: 1_500,
        currency: 'CHF',
        createdAt: '2025-09-10T00:00:00Z',
        status: 'created',
        version: 1,
      },
      { occurredAt: '2025-09-10T00:00:00Z' },
    );
    // Set aside after its last delivery failed (a bug since fixed).
    expect(
      await setAsideUnprocessable(svc.service, JSON.stringify(failed), new Error('deadlock detected')),
    ).toBe('dead_lettered');
    const unknown = partiallyPaid('inv-partial-cli');
    await publishInProcess(svc, [unknown]);
    await consumed(svc);

    const listed = await cli('crm:dead-letters:list');
    expect(listed.exitCode).toBe(0);
    const letters = JSON.parse(listed.stdout) as { messageId: string; reason: string; envelope?: unknown }[];
    expect(letters.map((letter) => [letter.messageId, letter.reason])).toEqual(
      expect.arrayContaining([
        [failed.messageId, 'processing_failed'],
        [unknown.messageId, 'unknown_status'],
      ]),
    );
    expect(letters.every((letter) => letter.envelope === undefined)).toBe(true);

    const shown = await cli('crm:dead-letters:show', '--message-id', failed.messageId);
    expect(JSON.parse(shown.stdout)).toMatchObject({
      messageId: failed.messageId,
      detail: 'processing failed: deadlock detected',
      envelope: failed,
    });
    expect((await cli('crm:dead-letters:show', '--message-id', 'nope')).exitCode).toBe(2);

    const replay = await cli('crm:dead-letters:replay', '--all');
    expect(replay.exitCode).toBe(0);
    expect(JSON.parse(replay.stdout)).toMatchObject({ applied: 1, stillFailing: 1 });
    expect((await chf())?.refunds).toEqual({ count: 1, amountMinor: 1_500 });
    const after = JSON.parse((await cli('crm:dead-letters:list')).stdout) as { messageId: string }[];
    expect(after.map((letter) => letter.messageId)).toEqual([unknown.messageId]);
  });
});
