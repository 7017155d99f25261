// The entry point other domains import (package export "identity-service/platform-client"): the
// reference-data client, the service-token helper, and the NATS JetStream bus to feed it events.
export {
  ReferenceDataClient,
  type ReferenceDataChange,
  type ReferenceDataClientOptions,
} from './reference-data-client.js';
export { serviceTokenProvider, type ServiceTokenProviderOptions } from './service-token-provider.js';
export {
  NatsJetStreamBus,
  type NatsJetStreamBusOptions,
} from '../../../adapters/event-bus/nats-jetstream-bus.js';
export type { ReferenceEntry } from '../reference-data/entities.js';
export type { ReferenceEntity } from '../events/platform-events.js';
export type { Envelope } from '../../events/envelope.js';
export type { EventSource } from '../../events/event-bus.js';
export {
  verifyEcosystemTokens,
  ecosystemTokenVerifier,
  ecosystemPrincipalOf,
  requirePermission,
  requireServiceScope,
  principalMay,
  InvalidEcosystemTokenError,
  type EcosystemPrincipal,
  type EcosystemTokenKind,
  type ResourceServerOptions,
} from './resource-server.js';
