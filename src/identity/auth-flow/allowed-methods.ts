import { z } from 'zod';
import { defineSetting } from '../../platform/settings/platform-settings.js';

/**
 * The additional sign-in methods (auth_method plugin slugs) users may enable in their security settings
 * (spec: AuthFlowConfig.allowedMethods). Platform-owned, read through the platform settings. By default
 * users may add an authenticator app (TOTP).
 */
export const allowedMethodsSetting = defineSetting(
  'identity.auth_flow.allowed_methods',
  z.array(z.string().min(1).max(100)),
  ['totp'],
);
