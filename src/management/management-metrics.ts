import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Database } from '../db/database.js';
import { countPendingDeadLetters } from './ingestion/dead-letters.js';
import type { IngestionOutcome } from './ingestion/ingest-crm-messages.js';

/**
 * The management module's metrics (Prometheus text at GET /api/v2/management/metrics). A registry per
 * service instance, not prom-client's global one: a process may hold several services (tests, a host
 * app mounting two).
 */
export class ManagementMetrics {
  readonly registry: Registry;
  readonly #messages: Counter<'outcome'>;
  readonly #batchSeconds: Histogram;
  readonly #snapshotFailures: Counter<'kind' | 'reason'>;

  /** `registry`: the service's (GET /metrics shows these too); default a registry of its own. */
  constructor(db: Database, registry = new Registry()) {
    this.registry = registry;
    this.#messages = new Counter({
      name: 'management_crm_messages_total',
      help: 'crm messages handled, by outcome (applied, superseded, duplicate, dead_lettered, rejected)',
      labelNames: ['outcome'] as const,
      registers: [this.registry],
    });
    this.#batchSeconds = new Histogram({
      name: 'management_crm_batch_seconds',
      help: 'Time to apply one batch of crm messages (one transaction)',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [this.registry],
    });
    this.#snapshotFailures = new Counter({
      name: 'management_crm_snapshot_failures_total',
      help: 'crm snapshot reads that failed (crm down or a malformed answer); the last good snapshot was served',
      labelNames: ['kind', 'reason'] as const,
      registers: [this.registry],
    });

    new Gauge({
      name: 'management_crm_dead_letters',
      help: 'Dead letters waiting for a replay',
      registers: [this.registry],
      async collect() {
        this.set(await countPendingDeadLetters(db));
      },
    });
  }

  countBatch(outcome: IngestionOutcome, seconds: number): void {
    this.#batchSeconds.observe(seconds);
    this.#messages.inc({ outcome: 'applied' }, outcome.applied);
    this.#messages.inc({ outcome: 'superseded' }, outcome.superseded);
    this.#messages.inc({ outcome: 'duplicate' }, outcome.duplicate);
    this.#messages.inc({ outcome: 'dead_lettered' }, outcome.deadLettered);
    this.#messages.inc({ outcome: 'rejected' }, outcome.rejected);
  }

  countSnapshotFailure(kind: string, reason: string): void {
    this.#snapshotFailures.inc({ kind, reason });
  }

  async text(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
