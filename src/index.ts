// The package's main entry (`import ... from 'identity-service'`): the service, its configuration and
// database, and the plugin API (auth-flow steps, auth methods, transports, errors). docs/library.md
// describes each export; anything not exported here is internal and may change.

// The service
export { createIdentityService, type IdentityService, type IdentityServiceOptions } from './service.js';
export { loadConfig, ConfigError, type Config } from './config.js';
export { openDatabase, type Database, type DatabaseHandle, type Queryable } from './db/database.js';
export { migrateToLatest } from './db/migrate.js';
export { generateRsaPrivateKeyPem, type Secrets } from './keys/development-secrets.js';
export { systemClock, type Clock } from './clock.js';
export { createLogger, type Logger } from './logger.js';

// Errors a plugin throws to refuse a request: { error, message, details? } with the status
export {
  ApiError,
  type ApiErrorBody,
  badRequest,
  unauthorized,
  forbidden,
  notFound,
  conflict,
  tooManyRequests,
} from './http/api-error.js';

// Auth-flow steps (plugin kind auth_flow_step) and funnels
export type {
  AuthFlowStep,
  StepContext,
  StepResult,
  StepScreen,
  StepField,
  RequestInfo,
} from './identity/auth-flow/step.js';
// A RequestInfo for a request made outside HTTP (a test, a job): its address block is derived.
export { requestFrom } from './http/request-info.js';
export { StepRegistry } from './identity/auth-flow/step-registry.js';
export { replaceFunnel, loadFunnel, type FunnelStep } from './identity/auth-flow/funnel-steps.js';
export { flowKinds, type FlowKind, type FlowSession } from './identity/auth-flow/flow-session.js';

// Sign-in methods (plugin kind auth_method)
export {
  AuthMethodRegistry,
  type AuthMethodPlugin,
  type AuthMethodSetup,
} from './identity/auth-methods/auth-method-plugin.js';
export { authMethodTypes, type AuthMethodType } from './identity/auth-methods/auth-method-type.js';

// Transports (plugin kind transport): email, SMS, messengers
export type { Transport, OutgoingMessage, Channel } from './identity/transports/transport.js';
export type { TransportRegistry } from './identity/transports/transport-registry.js';

// Bearer tokens of the ecosystem, for routes a host adds next to the service
export {
  requireAccessToken,
  requirePermission,
  principalOf,
  type AuthenticatedState,
} from './http/bearer-auth.js';
export type { Principal, TokenKind, TokenVerification } from './tokens/principal.js';
