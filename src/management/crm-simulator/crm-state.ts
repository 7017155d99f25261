import type { CrmEnvelope } from '../crm-contract/crm-envelope.js';
import {
  crmEntities,
  crmMessageTypes,
  isCrmMessageType,
  type CrmEntity,
} from '../crm-contract/crm-events.js';
import type {
  BalanceAggregate,
  Period,
  SalesAggregate,
  TeacherPayouts,
} from '../crm-contract/crm-snapshots.js';
import { utcDayOf } from '../crm-contract/value-formats.js';

type Data = Record<string, unknown>;
interface Figure {
  count: number;
  amountMinor: number;
}

/**
 * The simulated crm's own records: the latest version of each, as published so far. Its snapshot
 * answers are computed here, independently of management's code, from the same definitions
 * (docs/crm-contract.md), which makes them the ground truth the tests and the bench compare against.
 */
export class CrmState {
  readonly #records = new Map<string, { entity: CrmEntity; data: Data }>();

  /** Takes a valid event in (the crm's own change); returns whether it was newer than what it had. */
  apply(envelope: CrmEnvelope): boolean {
    if (!isCrmMessageType(envelope.messageType)) return false;
    const entity = crmMessageTypes[envelope.messageType].entity;
    const data = envelope.data as Data;
    const key = `${entity}:${String(data[crmEntities[entity].naturalKey])}`;
    const current = this.#records.get(key);
    if (current && Number(current.data.version) >= Number(data.version)) return false;
    this.#records.set(key, { entity, data });
    return true;
  }

  get size(): number {
    return this.#records.size;
  }

  *records(entity: CrmEntity): Iterable<Data> {
    for (const record of this.#records.values()) if (record.entity === entity) yield record.data;
  }

  sales(period: Period, generatedAt: Date): SalesAggregate {
    const inPeriod = (instant: unknown) => {
      if (typeof instant !== 'string') return false;
      const day = utcDayOf(instant);
      return day >= period.from && day < period.to;
    };
    const currencies = new Map<string, SalesAggregate['currencies'][number]>();
    const ofCurrency = (currency: string) => {
      let entry = currencies.get(currency);
      if (!entry) {
        entry = {
          currency,
          invoicesIssued: zero(),
          paymentsSucceeded: zero(),
          refunds: zero(),
          dealsWon: zero(),
        };
        currencies.set(currency, entry);
      }
      return entry;
    };
    const add = (figure: Figure, data: Data) => {
      figure.count += 1;
      figure.amountMinor += Number(data.amountMinor);
    };
    let leads = 0;
    const deals = { created: 0, won: 0, lost: 0 };
    for (const lead of this.records('lead')) if (inPeriod(lead.createdAt)) leads += 1;
    for (const deal of this.records('deal')) {
      if (inPeriod(deal.createdAt)) deals.created += 1;
      if (deal.status === 'won' && inPeriod(deal.closedAt)) {
        deals.won += 1;
        add(ofCurrency(String(deal.currency)).dealsWon, deal);
      }
      if (deal.status === 'lost' && inPeriod(deal.closedAt)) deals.lost += 1;
    }
    for (const invoice of this.records('invoice')) {
      if (inPeriod(invoice.issuedAt)) add(ofCurrency(String(invoice.currency)).invoicesIssued, invoice);
    }
    for (const payment of this.records('payment')) {
      if (payment.status === 'succeeded' && inPeriod(payment.processedAt)) {
        add(ofCurrency(String(payment.currency)).paymentsSucceeded, payment);
      }
    }
    for (const refund of this.records('refund')) {
      if (inPeriod(refund.createdAt)) add(ofCurrency(String(refund.currency)).refunds, refund);
    }
    return {
      from: period.from,
      to: period.to,
      generatedAt: generatedAt.toISOString(),
      leads: { created: leads },
      deals,
      currencies: [...currencies.values()].sort((a, b) => a.currency.localeCompare(b.currency)),
    };
  }

  balance(asOf: Date): BalanceAggregate {
    const currencies = new Map<string, BalanceAggregate['currencies'][number]>();
    const ofCurrency = (currency: string) => {
      let entry = currencies.get(currency);
      if (!entry) {
        entry = {
          currency,
          receivedMinor: 0,
          refundedMinor: 0,
          payoutsPaidMinor: 0,
          netMinor: 0,
          outstandingMinor: 0,
          overdueMinor: 0,
        };
        currencies.set(currency, entry);
      }
      return entry;
    };
    for (const payment of this.records('payment')) {
      if (payment.status === 'succeeded')
        ofCurrency(String(payment.currency)).receivedMinor += Number(payment.amountMinor);
    }
    for (const refund of this.records('refund'))
      ofCurrency(String(refund.currency)).refundedMinor += Number(refund.amountMinor);
    for (const payout of this.records('teacher_payout')) {
      if (payout.status === 'paid')
        ofCurrency(String(payout.currency)).payoutsPaidMinor += Number(payout.amountMinor);
    }
    for (const invoice of this.records('invoice')) {
      if (invoice.status === 'issued' || invoice.status === 'overdue') {
        ofCurrency(String(invoice.currency)).outstandingMinor += Number(invoice.amountMinor);
      }
      if (invoice.status === 'overdue')
        ofCurrency(String(invoice.currency)).overdueMinor += Number(invoice.amountMinor);
    }
    for (const entry of currencies.values()) {
      entry.netMinor = entry.receivedMinor - entry.refundedMinor - entry.payoutsPaidMinor;
    }
    return {
      asOf: asOf.toISOString(),
      currencies: [...currencies.values()].sort((a, b) => a.currency.localeCompare(b.currency)),
    };
  }

  teacherPayouts(month: string, generatedAt: Date): TeacherPayouts {
    const items: TeacherPayouts['items'] = [];
    const currencies = new Map<string, TeacherPayouts['currencies'][number]>();
    for (const payout of this.records('teacher_payout')) {
      if (payout.period !== month) continue;
      const status = payout.status as 'approved' | 'paid';
      const currency = String(payout.currency);
      items.push({
        payrollItemId: String(payout.payrollItemId),
        teacherId: String(payout.teacherId),
        amountMinor: Number(payout.amountMinor),
        currency,
        status,
      });
      const entry = currencies.get(currency) ?? { currency, approved: zero(), paid: zero() };
      entry[status].count += 1;
      entry[status].amountMinor += Number(payout.amountMinor);
      currencies.set(currency, entry);
    }
    items.sort((a, b) => a.payrollItemId.localeCompare(b.payrollItemId));
    return {
      period: month,
      generatedAt: generatedAt.toISOString(),
      currencies: [...currencies.values()].sort((a, b) => a.currency.localeCompare(b.currency)),
      items,
    };
  }
}

function zero(): Figure {
  return { count: 0, amountMinor: 0 };
}
