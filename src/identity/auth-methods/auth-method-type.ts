import { z } from 'zod';

/** The kinds of sign-in method a user can have (spec: User auth method, type). */
export const authMethodTypes = ['password', 'email_otp', 'sms_otp', 'totp', 'oauth_provider'] as const;
export type AuthMethodType = (typeof authMethodTypes)[number];
export const authMethodTypeSchema = z.enum(authMethodTypes);
