import type Router from '@koa/router';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import type { EventRuntime } from '../events/event-runtime.js';
import type { Logger } from '../logger.js';
import type { TokenVerification } from '../tokens/principal.js';
import { eventSchemaRoutes } from './api/event-schema-routes.js';
import { featureFlagRoutes } from './api/feature-flag-routes.js';
import { i18nRoutes } from './api/i18n-routes.js';
import { platformAccess } from './api/platform-access.js';
import { createPlatformApi } from './api/platform-api.js';
import { referenceDataRoutes } from './api/reference-data-routes.js';
import { referenceDataChanged, type PlatformEvents } from './events/platform-events.js';
import { ReferenceDataCache } from './reference-data/reference-data-cache.js';
import type { ReferenceDataChangeDeps } from './reference-data/reference-data-changes.js';
import { listEntries, toEntry } from './reference-data/reference-data-repository.js';

export interface PlatformDeps {
  config: Config;
  db: Database;
  clock: Clock;
  logger: Logger;
  events: EventRuntime<PlatformEvents>;
  tokenVerification: TokenVerification;
}

export interface Platform {
  /** /api/v2/platform */
  router: Router;
  referenceData: { cache: ReferenceDataCache; changes: ReferenceDataChangeDeps };
  /** Resolves once this node hears reference-data changes from the bus (other nodes' included). */
  ready: Promise<void>;
  close(): void;
}

/**
 * The platform layer hosted by this service: reference data (cached per node, invalidated by
 * platform.reference_data.changed from any node), feature flags and translation packages.
 */
export function createPlatform(deps: PlatformDeps): Platform {
  const { db, clock, logger, events } = deps;
  const cache = new ReferenceDataCache({
    load: async (entity) => (await listEntries(db, entity)).map(toEntry),
  });
  const changes: ReferenceDataChangeDeps = {
    outbox: events.outbox,
    clock,
    afterChange: (entity) => cache.invalidate(entity),
  };
  const subscription = events.bus.subscribe('platform.reference_data.changed', (envelope) => {
    const data = referenceDataChanged.safeParse(envelope.data);
    if (data.success) cache.invalidate(data.data.entity);
    else cache.clear();
  });
  // Events may have been missed while the broker was away.
  const stopResync = events.bus.onReconnect(() => cache.clear());

  const access = platformAccess(deps.tokenVerification);
  const router = createPlatformApi({ config: deps.config, logger }, [
    referenceDataRoutes({ db, clock, cache, changes, access }),
    featureFlagRoutes({ db, clock, outbox: events.outbox, access }),
    i18nRoutes({ db, clock, outbox: events.outbox, access }),
    eventSchemaRoutes(),
  ]);

  return {
    router,
    referenceData: { cache, changes },
    ready: subscription.ready,
    close() {
      subscription.unsubscribe();
      stopResync();
    },
  };
}
