import type Router from '@koa/router';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import type { EventBus } from '../events/event-bus.js';
import type { CleanupTask } from '../jobs/cleanup-expired-records.js';
import type { Logger } from '../logger.js';
import { serviceTokenProvider } from '../platform/client/service-token-provider.js';
import type { TokenVerification } from '../tokens/principal.js';
import { crmSnapshotScopes } from './crm-contract/crm-snapshots.js';
import { dashboardRoutes } from './api/dashboard-routes.js';
import { managementAccess } from './api/management-access.js';
import { createManagementApi } from './api/management-api.js';
import { metricsRoutes } from './api/metrics-routes.js';
import { CrmConsumer, type CrmEventSource } from './ingestion/crm-consumer.js';
import { crmEventSourceFor } from './ingestion/crm-event-sources.js';
import { ManagementMetrics } from './management-metrics.js';
import { dashboardsPageRoutes } from './pages/dashboards-page.js';
import { crmRetentionTasks } from './retention/crm-retention.js';
import type { Registry } from 'prom-client';
import { CrmSnapshotClient } from './snapshots/crm-snapshot-client.js';
import { CrmSnapshots } from './snapshots/crm-snapshots.js';

export interface ManagementDeps {
  config: Config;
  db: Database;
  clock: Clock;
  logger: Logger;
  bus: EventBus;
  tokenVerification: TokenVerification;
  /** Where crm's events come from, instead of the one the bus implies. */
  crmEvents?: CrmEventSource;
  /** The service's metrics registry (GET /metrics); absent: a registry of management's own. */
  metricsRegistry?: Registry;
}

export interface Management {
  /** /api/v2/management */
  router: Router;
  /** /:lang/management/dashboards */
  pages: Router;
  /** The crm consumer (undefined with CRM_CONSUMER=false). */
  consumer: CrmConsumer | undefined;
  crmEvents: CrmEventSource | undefined;
  snapshots: CrmSnapshots;
  metrics: ManagementMetrics;
  /** crm data past its 7-year retention, for the hourly cleanup. */
  retentionTasks: CleanupTask[];
  close(): Promise<void>;
}

/**
 * The management domain (docs/management.md): consumes crm's events into records and daily totals,
 * reads crm's snapshots, serves the finance, marketing and sales dashboards and their page.
 */
export function createManagement(deps: ManagementDeps): Management {
  const { config, db, clock, logger, bus } = deps;
  const metrics = new ManagementMetrics(db, deps.metricsRegistry);
  const crm = config.crm;
  const client =
    crm.baseUrl && crm.clientId && crm.clientSecret
      ? new CrmSnapshotClient({
          baseUrl: crm.baseUrl,
          accessToken: serviceTokenProvider({
            issuer: config.issuer,
            clientId: crm.clientId,
            clientSecret: crm.clientSecret,
            scope: [...new Set(Object.values(crmSnapshotScopes))].join(' '),
            clock,
          }),
        })
      : undefined;
  const snapshots = new CrmSnapshots({ db, clock, logger, bus, metrics, client });

  const crmEvents = crm.consumer ? (deps.crmEvents ?? crmEventSourceFor(bus, config, logger)) : undefined;
  const consumer = crmEvents ? new CrmConsumer({ db, clock, logger, metrics, source: crmEvents }) : undefined;
  consumer?.start();

  const access = managementAccess(deps.tokenVerification);
  const router = createManagementApi({ config, logger }, [
    dashboardRoutes({ db, clock, snapshots, access }),
    metricsRoutes({ metrics, access }),
  ]);
  return {
    router,
    pages: dashboardsPageRoutes(),
    consumer,
    crmEvents,
    snapshots,
    metrics,
    retentionTasks: crmRetentionTasks,
    async close() {
      await consumer?.stop();
    },
  };
}
