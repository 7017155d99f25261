import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Clock } from '../clock.js';
import type { Database } from '../db/database.js';
import type { RequestObservers } from '../http/request-context.js';
import { auditEventTypes } from '../identity/audit/audit-log.js';

/**
 * The service's Prometheus metrics (GET /metrics, docs/operations.md). One registry per service
 * instance, never prom-client's global one: a process may hold several services (tests, a host app
 * mounting two), and a host's own metrics stay its own. Modules with metrics of their own
 * (management) register them in this registry.
 */
export class ServiceMetrics {
  readonly registry = new Registry();
  readonly httpRequests = new Counter({
    name: 'identity_http_requests_total',
    help: 'HTTP requests answered, by method, route (the path pattern) and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [this.registry],
  });
  readonly httpDuration = new Histogram({
    name: 'identity_http_request_duration_seconds',
    help: 'Time to answer an HTTP request, by method and route',
    labelNames: ['method', 'route'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });
  readonly logins = new Counter({
    name: 'identity_logins_total',
    help: 'Passwords and codes checked at sign-in or re-authentication, by outcome (succeeded, failed)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  readonly lockouts = new Counter({
    name: 'identity_lockouts_total',
    help: 'Lockouts started by failed sign-ins: an account from a source (account) or an IP address (ip)',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });
  readonly tokensIssued = new Counter({
    name: 'identity_tokens_issued_total',
    help: 'Successful token endpoint grants, by grant_type',
    labelNames: ['grant_type'] as const,
    registers: [this.registry],
  });
  readonly rateLimitRejections = new Counter({
    name: 'identity_rate_limit_rejections_total',
    help: 'Requests refused by a rate limit, by rule',
    labelNames: ['rule'] as const,
    registers: [this.registry],
  });

  constructor(deps: { db: Database; clock: Clock }) {
    const { db, clock } = deps;
    new Gauge({
      name: 'identity_event_outbox_pending',
      help: 'Platform events written but not yet published to the event bus',
      registers: [this.registry],
      async collect() {
        this.set((await oldestPendingEvent(db)).count);
      },
    });
    new Gauge({
      name: 'identity_event_outbox_lag_seconds',
      help: 'Age of the oldest platform event not yet published (0 when none waits)',
      registers: [this.registry],
      async collect() {
        const { oldest } = await oldestPendingEvent(db);
        this.set(oldest ? Math.max(0, (clock.now().getTime() - oldest.getTime()) / 1000) : 0);
      },
    });
    collectDefaultMetrics({ register: this.registry, prefix: 'identity_' });
  }

  /** What requests count while they run (request-context.ts). */
  readonly observers: RequestObservers = {
    auditEvent: (type) => {
      if (type === auditEventTypes.loginSucceeded) this.logins.inc({ outcome: 'succeeded' });
      else if (type === auditEventTypes.loginFailed) this.logins.inc({ outcome: 'failed' });
      else if (type === auditEventTypes.accountLocked) this.lockouts.inc({ kind: 'account' });
      else if (type === auditEventTypes.ipThrottled) this.lockouts.inc({ kind: 'ip' });
    },
    rateLimited: (rule) => this.rateLimitRejections.inc({ rule }),
  };

  async text(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}

async function oldestPendingEvent(db: Database): Promise<{ count: number; oldest: Date | undefined }> {
  const row = (await db('event_outbox')
    .whereNull('sent_at')
    .first(db.raw('count(*)::int as count'), db.raw('min(created_at) as oldest'))) as
    { count: number; oldest: Date | string | null } | undefined;
  return {
    count: row?.count ?? 0,
    oldest: row?.oldest ? new Date(row.oldest) : undefined,
  };
}
