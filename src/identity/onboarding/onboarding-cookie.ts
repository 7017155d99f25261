import type { Context } from 'koa';
import { z } from 'zod';
import { publicPath } from '../../http/base-path.js';

/** How long a person has to go through onboarding after registering. */
export const onboardingLifetimeMs = 30 * 60 * 1000;

const cookieName = 'onboarding';

/**
 * Who is being onboarded in this browser and where they go afterwards: the account just registered, and
 * the OIDC interaction's resume address (on to consent and the client) or a path of this service. A
 * signed, httpOnly, SameSite=Lax cookie: another browser has none, a changed one fails its signature,
 * and a cross-site form post does not carry it. Set by the registration that just finished, cleared at
 * the end of onboarding. It acts only while the onboarding it names is in progress (onboardings.ts): a
 * copy dies with the user's sessions, and at the end of onboarding.
 */
const onboardingSchema = z.object({
  /** The onboarding's row (table onboardings). */
  id: z.string(),
  userId: z.string(),
  /** The OIDC interaction's resume URL, or a path of this service; absent: the "signed in" page. */
  returnTo: z.string().optional(),
  expiresAt: z.number(),
});
export type Onboarding = z.infer<typeof onboardingSchema>;

function write(ctx: Context, value: string | null) {
  ctx.cookies.set(cookieName, value, {
    signed: true,
    httpOnly: true,
    sameSite: 'lax',
    overwrite: true,
    path: publicPath(ctx, '/'),
    ...(value === null ? {} : { maxAge: onboardingLifetimeMs }),
  });
}

export const onboardingCookie = {
  start(ctx: Context, onboarding: Omit<Onboarding, 'expiresAt'>, now: Date): void {
    const value = { ...onboarding, expiresAt: now.getTime() + onboardingLifetimeMs };
    write(ctx, Buffer.from(JSON.stringify(value)).toString('base64url'));
  },
  read(ctx: Context, now: Date): Onboarding | undefined {
    const raw = ctx.cookies.get(cookieName, { signed: true });
    if (!raw) return undefined;
    try {
      const parsed = onboardingSchema.safeParse(JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')));
      return parsed.success && parsed.data.expiresAt > now.getTime() ? parsed.data : undefined;
    } catch {
      return undefined;
    }
  },
  clear(ctx: Context): void {
    write(ctx, null);
  },
};
