import type { Context } from 'koa';
import { z } from 'zod';
import { publicPath } from '../http/base-path.js';

/** As long as an interaction may live: after that its page is simply expired. */
const lifetimeMs = 60 * 60 * 1000;
const cookieName = 'finished_sign_ins';
/** A few are enough: the back button walks through the last sign-in's pages only. */
const kept = 5;

const entriesSchema = z.array(z.object({ uid: z.string(), to: z.string() })).max(kept);

/**
 * Where the pages of a finished sign-in send the back button. Once the engine has sent the person on
 * to the client, the interaction is gone and its page (/:lang/auth?interaction=<uid>) could only say
 * "expired". Instead, like Keycloak's "Back to application", the page sends them back to the
 * application they signed in to: the origin of the redirect URI of that authorization (its code was
 * used, so the authorization itself can't be replayed). Kept per interaction in a signed, httpOnly
 * cookie of this browser, so an interaction id in a link proves nothing by itself.
 */
export const finishedSignIns = {
  remember(ctx: Context, uid: string, redirectUri: unknown): void {
    const to = applicationHome(redirectUri);
    if (!to) return;
    const entries = [{ uid, to }, ...read(ctx).filter((entry) => entry.uid !== uid)].slice(0, kept);
    ctx.cookies.set(cookieName, Buffer.from(JSON.stringify(entries)).toString('base64url'), {
      signed: true,
      httpOnly: true,
      sameSite: 'lax',
      overwrite: true,
      path: publicPath(ctx, '/'),
      maxAge: lifetimeMs,
    });
  },
  /** Where to send the person for this finished interaction, if this browser finished it. */
  destination(ctx: Context, uid: unknown): string | undefined {
    return typeof uid === 'string' ? read(ctx).find((entry) => entry.uid === uid)?.to : undefined;
  },
};

function read(ctx: Context) {
  const raw = ctx.cookies.get(cookieName, { signed: true });
  if (!raw) return [];
  try {
    const parsed = entriesSchema.safeParse(JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')));
    return parsed.success ? parsed.data : [];
  } catch {
    return [];
  }
}

/** The application's own page: the origin of its redirect URI (web applications; not native schemes). */
function applicationHome(redirectUri: unknown): string | undefined {
  if (typeof redirectUri !== 'string') return undefined;
  try {
    const url = new URL(redirectUri);
    return url.protocol === 'https:' || url.protocol === 'http:' ? `${url.origin}/` : undefined;
  } catch {
    return undefined;
  }
}
