import type { Context } from 'koa';
import { z } from 'zod';
import { publicPath } from '../../http/base-path.js';

/** How long the person may stay at the provider before the attempt expires. */
export const attemptLifetimeMs = 10 * 60 * 1000;
/** How long a pending link waits for the person to sign in to the existing account. */
export const pendingLinkLifetimeMs = 10 * 60 * 1000;

const attemptCookie = 'federation_attempt';
const pendingLinkCookie = 'federation_link';

/**
 * One sign-in at a provider, bound to this browser: the checks (state, nonce, PKCE verifier) and what
 * to finish (the OIDC interaction). Kept in a signed, httpOnly, SameSite=Lax cookie scoped to the
 * callback path: another browser (or a forged callback link) has no such cookie, a changed one fails
 * its signature, and the callback clears it (one use).
 */
const attemptSchema = z.object({
  provider: z.string(),
  state: z.string(),
  nonce: z.string().optional(),
  codeVerifier: z.string(),
  /** Signs in for this OIDC interaction; absent: starts a main-auth session and returns to `returnTo`. */
  interactionUid: z.string().optional(),
  /** Absent (and no interaction): the "signed in" page answers, in `lang`. */
  returnTo: z.string().optional(),
  lang: z.string().max(20).optional(),
  /** Links the provider account to this signed-in user (security settings) instead of signing in. */
  linkUserId: z.string().optional(),
  /** The main-auth session that asked for the link: it must still be live when the provider answers. */
  linkSessionId: z.string().optional(),
  /** The funnel's `oauth` step this sign-in answers (the token its flow holds). */
  stepToken: z.string().optional(),
  expiresAt: z.number(),
});
export type FederationAttempt = z.infer<typeof attemptSchema>;

/**
 * A link waiting for the person to prove they own the existing account (provider email not verified):
 * which provider subject, which account it matched, and whether the person agreed. Bound to the
 * interaction's pages by its path and to this browser by its signature.
 */
const pendingLinkSchema = z.object({
  provider: z.string(),
  subject: z.string(),
  candidateUserId: z.string(),
  matchedBy: z.enum(['email', 'phone']),
  interactionUid: z.string(),
  agreed: z.boolean(),
  expiresAt: z.number(),
});
export type PendingLink = z.infer<typeof pendingLinkSchema>;

const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

function decode<T>(schema: z.ZodType<T>, raw: string | undefined, now: Date): T | undefined {
  if (!raw) return undefined;
  try {
    const parsed = schema.safeParse(JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')));
    if (!parsed.success) return undefined;
    return (parsed.data as { expiresAt: number }).expiresAt > now.getTime() ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

function write(ctx: Context, name: string, path: string, value: string | null, maxAgeMs: number) {
  ctx.cookies.set(name, value, {
    signed: true,
    httpOnly: true,
    sameSite: 'lax',
    overwrite: true,
    path: publicPath(ctx, path),
    ...(value === null ? {} : { maxAge: maxAgeMs }),
  });
}

const callbackPath = '/oauth/providers';
// The sign-in page is /:lang/auth?interaction=<uid> (any language) and posts to /:lang/auth/step: the
// pending link is sent on every path and read only for its own interaction (readPendingLink).
const interactionPathOf = (_uid: string) => '/';

export const federationCookies = {
  setAttempt(ctx: Context, attempt: FederationAttempt): void {
    write(ctx, attemptCookie, callbackPath, encode(attempt), attemptLifetimeMs);
  },
  readAttempt(ctx: Context, now: Date): FederationAttempt | undefined {
    return decode(attemptSchema, ctx.cookies.get(attemptCookie, { signed: true }), now);
  },
  clearAttempt(ctx: Context): void {
    write(ctx, attemptCookie, callbackPath, null, 0);
  },
  setPendingLink(ctx: Context, link: PendingLink): void {
    write(
      ctx,
      pendingLinkCookie,
      interactionPathOf(link.interactionUid),
      encode(link),
      pendingLinkLifetimeMs,
    );
  },
  readPendingLink(ctx: Context, interactionUid: string, now: Date): PendingLink | undefined {
    const link = decode(pendingLinkSchema, ctx.cookies.get(pendingLinkCookie, { signed: true }), now);
    return link?.interactionUid === interactionUid ? link : undefined;
  },
  clearPendingLink(ctx: Context, interactionUid: string): void {
    write(ctx, pendingLinkCookie, interactionPathOf(interactionUid), null, 0);
  },
};
