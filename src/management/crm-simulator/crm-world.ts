import { createCrmEnvelope, type CrmEnvelope } from '../crm-contract/crm-envelope.js';
import type { CrmMessageType } from '../crm-contract/crm-events.js';
import { SeededRandom } from './seeded-random.js';

export interface CrmWorldOptions {
  seed: number;
  /** First simulated day (UTC), YYYY-MM-DD. */
  start: string;
  days: number;
  /** Leads per day, on average (the rest scales with it). */
  leadsPerDay?: number;
  teachers?: number;
}

const owners = ['owner-anna', 'owner-boris', 'owner-dina', 'owner-egor', 'owner-irina', 'owner-oleg'];
const sources = ['google_ads', 'yandex_direct', 'referral', 'organic', 'partner', 'webinar'];
const products = ['course_python', 'course_math', 'olympiad_prep', 'english_club'];
const lostReasons = ['price', 'no_answer', 'competitor', 'timing'];
const failureCodes = ['card_declined', 'insufficient_funds', 'expired_card'];
const hourMs = 60 * 60 * 1000;
const dayMs = 24 * hourMs;

/**
 * A reproducible crm history: leads become deals, won deals get invoices, invoices get payments
 * (some failing first), some go overdue, some payments are refunded, paid invoices activate
 * entitlements (a few revoked), teachers' monthly payroll items are approved and paid. Every change
 * of a record is one event carrying the record in full with a growing version, in the order crm made
 * them; events after the last simulated day are not part of the history.
 */
export function generateCrmHistory(options: CrmWorldOptions): CrmEnvelope[] {
  const random = new SeededRandom(options.seed);
  const start = Date.parse(`${options.start}T00:00:00Z`);
  const end = start + options.days * dayMs;
  const changes: { at: number; order: number; type: CrmMessageType; data: Record<string, unknown> }[] = [];
  let order = 0;
  const emit = (at: number, type: CrmMessageType, data: Record<string, unknown>) => {
    if (at < end) changes.push({ at, order: order++, type, data: { ...data } });
  };
  const iso = (at: number) => new Date(at).toISOString();
  const later = (at: number, minHours: number, maxHours: number) =>
    at + random.int(minHours * 60, maxHours * 60) * 60_000;
  const bump = (version: number) => version + random.int(1, 3);
  const money = () =>
    random.chance(0.9)
      ? { currency: 'RUB', amountMinor: random.int(50, 1_200) * 10_000 }
      : { currency: 'USD', amountMinor: random.int(50, 1_500) * 100 };
  let serial = 0;
  const id = (prefix: string) => `${prefix}-${options.seed}-${(serial++).toString(36).padStart(5, '0')}`;

  const leadsPerDay = options.leadsPerDay ?? 20;
  for (let day = 0; day < options.days; day += 1) {
    const leadCount = random.int(Math.floor(leadsPerDay * 0.6), Math.ceil(leadsPerDay * 1.4));
    for (let index = 0; index < leadCount + random.int(0, 2); index += 1) {
      const direct = index >= leadCount;
      const createdAt = start + day * dayMs + random.int(0, dayMs - 1);
      const source = direct ? 'direct' : random.pick(sources);
      const leadId = direct ? null : id('lead');
      if (leadId)
        emit(createdAt, 'crm.lead.created', {
          leadId,
          source,
          createdAt: iso(createdAt),
          status: 'created',
          version: 1,
        });
      if (!direct && !random.chance(0.45)) continue;

      const dealAt = direct ? createdAt : later(createdAt, 1, 72);
      const deal: Record<string, unknown> = {
        dealId: id('deal'),
        leadId,
        ownerId: random.pick(owners),
        leadSource: source,
        ...money(),
        createdAt: iso(dealAt),
        status: 'open',
        version: 1,
      };
      emit(dealAt, 'crm.deal.created', deal);
      const outcome = random.int(0, 99);
      if (outcome >= 85) continue;
      const closedAt = later(dealAt, 4, 20 * 24);
      if (outcome >= 55) {
        emit(closedAt, 'crm.deal.lost', {
          ...deal,
          status: 'lost',
          closedAt: iso(closedAt),
          lostReason: random.pick(lostReasons),
          version: bump(1),
        });
        continue;
      }
      const won: Record<string, unknown> = {
        ...deal,
        status: 'won',
        closedAt: iso(closedAt),
        version: bump(1),
      };
      emit(closedAt, 'crm.deal.won', won);

      const issuedAt = later(closedAt, 0, 24);
      const dueAt = issuedAt + 14 * dayMs;
      const invoice: Record<string, unknown> = {
        invoiceId: id('inv'),
        customerId: id('cus'),
        dealId: won.dealId,
        currency: won.currency,
        amountMinor: won.amountMinor,
        issuedAt: iso(issuedAt),
        dueAt: iso(dueAt),
        status: 'issued',
        version: 1,
      };
      emit(issuedAt, 'crm.invoice.issued', invoice);
      let invoiceVersion = 1;
      const fate = random.int(0, 99);
      if (fate >= 90) continue;
      let payAt: number;
      if (fate >= 70) {
        invoiceVersion = bump(invoiceVersion);
        emit(dueAt, 'crm.invoice.overdue', { ...invoice, status: 'overdue', version: invoiceVersion });
        if (random.chance(0.5)) continue;
        payAt = later(dueAt, 2, 20 * 24);
      } else {
        payAt = later(issuedAt, 1, 13 * 24);
      }
      const payment = {
        invoiceId: invoice.invoiceId,
        customerId: invoice.customerId,
        currency: invoice.currency,
        amountMinor: invoice.amountMinor,
      };
      if (random.chance(0.15)) {
        const failedAt = Math.max(issuedAt, payAt - random.int(1, 6) * hourMs);
        emit(failedAt, 'crm.payment.failed', {
          ...payment,
          paymentId: id('pay'),
          processedAt: iso(failedAt),
          status: 'failed',
          failureCode: random.pick(failureCodes),
          version: 1,
        });
      }
      const paymentId = id('pay');
      emit(payAt, 'crm.payment.succeeded', {
        ...payment,
        paymentId,
        processedAt: iso(payAt),
        status: 'succeeded',
        version: 1,
      });
      emit(payAt, 'crm.invoice.paid', {
        ...invoice,
        status: 'paid',
        paidAt: iso(payAt),
        version: bump(invoiceVersion),
      });
      if (random.chance(0.06)) {
        const refundAt = later(payAt, 24, 10 * 24);
        emit(refundAt, 'crm.refund.created', {
          refundId: id('ref'),
          paymentId,
          invoiceId: invoice.invoiceId,
          currency: invoice.currency,
          amountMinor: Math.round((Number(invoice.amountMinor) * random.int(30, 100)) / 100),
          createdAt: iso(refundAt),
          reasonCode: random.pick(['customer_request', 'duplicate_payment', 'course_cancelled']),
          status: 'created',
          version: 1,
        });
      }
      const entitlement = {
        entitlementId: id('ent'),
        customerId: invoice.customerId,
        productKey: random.pick(products),
        activatedAt: iso(payAt),
        status: 'active',
        version: 1,
      };
      emit(payAt, 'crm.entitlement.activated', entitlement);
      if (random.chance(0.1)) {
        const revokedAt = later(payAt, 24, 30 * 24);
        emit(revokedAt, 'crm.entitlement.revoked', {
          ...entitlement,
          status: 'revoked',
          revokedAt: iso(revokedAt),
          version: bump(1),
        });
      }
    }
  }

  // Payroll: each teacher, each month that starts in the history, approved at month end, paid on the 5th.
  const teachers = Array.from({ length: options.teachers ?? 12 }, (_, index) => `teacher-${index + 1}`);
  const month = new Date(start);
  month.setUTCDate(1);
  for (; month.getTime() < end; month.setUTCMonth(month.getUTCMonth() + 1)) {
    const period = month.toISOString().slice(0, 7);
    const nextMonth = new Date(month);
    nextMonth.setUTCMonth(nextMonth.getUTCMonth() + 1);
    for (const teacherId of teachers) {
      const approvedAt = nextMonth.getTime() - random.int(1, 48) * hourMs;
      const item = {
        payrollItemId: id('pi'),
        teacherId,
        period,
        currency: 'RUB',
        amountMinor: random.int(200, 1_500) * 10_000,
        approvedAt: iso(approvedAt),
        status: 'approved',
        version: 1,
      };
      emit(approvedAt, 'crm.teacher_payout.approved', item);
      const paidAt = nextMonth.getTime() + 4 * dayMs + random.int(0, 23) * hourMs;
      emit(paidAt, 'crm.teacher_payout.paid', {
        ...item,
        status: 'paid',
        paidAt: iso(paidAt),
        version: bump(1),
      });
    }
  }

  changes.sort((a, b) => a.at - b.at || a.order - b.order);
  return changes.map((change) =>
    createCrmEnvelope(change.type, change.data, {
      occurredAt: new Date(change.at),
      messageId: random.uuid(),
    }),
  );
}
