import { z } from 'zod';
import { ApiError } from '../../http/api-error.js';
import type { User } from '../users/user.js';
import { AuthMethodRegistry, type AuthMethodPlugin } from './auth-method-plugin.js';
import { beginTotpSetup, confirmTotpSetup, pendingTotpSetup, type TotpDependencies } from './totp-method.js';
import { saveUserAuthMethod } from './user-auth-methods.js';

const accountLabel = (user: User) => user.email ?? user.phone ?? user.id;

const codeInput = z.object({ code: z.string().trim().min(1).max(16) });

/** Codes by email or SMS need only the verified contact: setting them up turns them on. */
function contactCodeMethod(type: 'email_otp' | 'sms_otp'): AuthMethodPlugin {
  const kind = type === 'email_otp' ? 'email' : 'phone';
  return {
    type,
    title: type === 'email_otp' ? 'Code by email' : 'Code by SMS',
    stepId: 'otp-code',
    identifierKind: kind,
    removal: 'disable',
    setup: {
      async begin(db, user, now) {
        const verified =
          kind === 'email' ? user.email && user.emailVerified : user.phone && user.phoneVerified;
        if (!verified) {
          throw new ApiError(
            409,
            'contact_not_verified',
            `Add and verify your ${kind === 'email' ? 'email address' : 'phone number'} first.`,
          );
        }
        await saveUserAuthMethod(db, user.id, type, { isEnabled: true, isVerified: true }, now);
        return { enabled: true };
      },
    },
  };
}

/** The methods the service ships: password, codes by email and SMS, TOTP authenticator apps. */
export function builtInAuthMethods(totp: TotpDependencies): AuthMethodRegistry {
  return new AuthMethodRegistry()
    .register({ type: 'password', title: 'Password', stepId: 'password', removal: 'disable' })
    .register(contactCodeMethod('email_otp'))
    .register(contactCodeMethod('sms_otp'))
    .register({
      type: 'totp',
      title: 'Authenticator app',
      stepId: 'totp',
      removal: 'delete',
      setup: {
        begin: async (db, user, now) => ({
          ...(await beginTotpSetup(db, totp, { id: user.id, label: accountLabel(user) }, now)),
        }),
        pending: async (db, user) => {
          const view = await pendingTotpSetup(db, totp, { id: user.id, label: accountLabel(user) });
          return view ? { ...view } : undefined;
        },
        input: codeInput,
        confirm: async (db, user, { code }, now) => {
          await confirmTotpSetup(db, totp, user.id, code, now);
        },
      },
    });
}
