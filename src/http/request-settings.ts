import { resolveSettings, type ServiceSettings } from '../defaults.js';
import { currentRequest } from './request-context.js';

const defaultSettings = resolveSettings();

/**
 * The settings of the service serving the current request (`createIdentityService({ settings })`), so
 * the rules applied deep inside a request (the lockout ladder, one-time codes, cookie names) are that
 * service's, as the request id is: two services in one process never see each other's. The request
 * envelope puts them into the request's context (request-envelope.ts). Outside a request: the
 * defaults.
 */
export function currentSettings(): ServiceSettings {
  return currentRequest()?.settings ?? defaultSettings;
}
