import type { Clock } from '../../clock.js';
import type { Database } from '../../db/database.js';
import { createEnvelope } from '../../events/envelope.js';
import type { EventBus } from '../../events/event-bus.js';
import type { Logger } from '../../logger.js';
import type {
  BalanceAggregate,
  Period,
  SalesAggregate,
  TeacherPayouts,
} from '../crm-contract/crm-snapshots.js';
import type { ManagementMetrics } from '../management-metrics.js';
import { SnapshotUnavailable, type CrmSnapshotClient } from './crm-snapshot-client.js';
import { loadSnapshot, saveSnapshot, type SnapshotKind } from './snapshot-store.js';

/** The alert raised on the bus when a crm read fails (besides the error log line and the metric). */
export const snapshotUnavailableType = 'management.crm_snapshot.unavailable';

/**
 * A crm snapshot as management serves it. `fresh`: read from crm just now (or within `freshForMs`);
 * `stale`: crm failed, this is the last successful answer, from `fetchedAt`; `unavailable`: crm failed
 * and there never was an answer for this period; `not_configured`: no CRM_BASE_URL.
 */
export type SnapshotView<Body> =
  | { status: 'fresh' | 'stale'; fetchedAt: string; body: Body; error?: string }
  | { status: 'unavailable'; error: string }
  | { status: 'not_configured' };

export interface CrmSnapshotsOptions {
  db: Database;
  clock: Clock;
  logger: Logger;
  bus: EventBus;
  metrics: ManagementMetrics;
  client: CrmSnapshotClient | undefined;
  /** A stored answer younger than this is served without asking crm. */
  freshForMs?: number;
  /** After a failure, crm is not asked again for this long (the last answer is served, stale). */
  retryAfterMs?: number;
}

/**
 * Reads crm's snapshots for the dashboards and keeps the last successful answer of each read per
 * period (spec: crm snapshot API unavailable → the last successful snapshot is shown and an alert is
 * raised). A failure raises the alert once per retry interval, so a dashboard refreshed every second
 * during an outage neither waits for crm nor floods the log.
 */
export class CrmSnapshots {
  readonly #failedUntil = new Map<string, { until: number; error: string }>();

  constructor(private readonly options: CrmSnapshotsOptions) {}

  get configured(): boolean {
    return this.options.client !== undefined;
  }

  sales(period: Period): Promise<SnapshotView<SalesAggregate>> {
    return this.#read('sales', `${period.from}/${period.to}`, (client) => client.sales(period));
  }

  balance(): Promise<SnapshotView<BalanceAggregate>> {
    return this.#read('balance', 'current', (client) => client.balance());
  }

  teacherPayouts(month: string): Promise<SnapshotView<TeacherPayouts>> {
    return this.#read('teacher_payouts', month, (client) => client.teacherPayouts(month));
  }

  async #read<Body>(
    kind: SnapshotKind,
    periodKey: string,
    fetchFromCrm: (client: CrmSnapshotClient) => Promise<Body>,
  ): Promise<SnapshotView<Body>> {
    const { client, db, clock } = this.options;
    if (!client) return { status: 'not_configured' };
    const now = clock.now();
    const stored = await loadSnapshot<Body>(db, kind, periodKey);
    if (stored && now.getTime() - stored.fetchedAt.getTime() < (this.options.freshForMs ?? 60_000)) {
      return { status: 'fresh', fetchedAt: stored.fetchedAt.toISOString(), body: stored.body };
    }
    const key = `${kind}\u0000${periodKey}`;
    const failure = this.#failedUntil.get(key);
    let error: string;
    if (failure && now.getTime() < failure.until) {
      error = failure.error;
    } else {
      try {
        const body = await fetchFromCrm(client);
        await saveSnapshot(db, kind, periodKey, body, now);
        this.#failedUntil.delete(key);
        return { status: 'fresh', fetchedAt: now.toISOString(), body };
      } catch (caught) {
        if (!(caught instanceof SnapshotUnavailable)) throw caught;
        error = caught.message;
        this.#failedUntil.set(key, { until: now.getTime() + (this.options.retryAfterMs ?? 30_000), error });
        await this.#alert(kind, periodKey, caught, stored?.fetchedAt);
      }
    }
    return stored
      ? { status: 'stale', fetchedAt: stored.fetchedAt.toISOString(), body: stored.body, error }
      : { status: 'unavailable', error };
  }

  async #alert(kind: SnapshotKind, period: string, failure: SnapshotUnavailable, lastSuccess?: Date) {
    const { logger, metrics, bus, clock } = this.options;
    const data = {
      kind,
      period,
      reason: failure.reason,
      error: failure.message,
      lastSuccessAt: lastSuccess?.toISOString() ?? null,
    };
    logger.error(data, 'crm snapshot unavailable; serving the last successful one');
    metrics.countSnapshotFailure(kind, failure.reason);
    try {
      await bus.publish(createEnvelope(snapshotUnavailableType, data, 'management', clock.now()));
    } catch (error) {
      logger.error({ err: error }, 'could not publish the crm snapshot alert');
    }
  }
}
