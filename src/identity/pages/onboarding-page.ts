import Router from '@koa/router';
import { pageForms } from '../../http/page-forms.js';
import type { Context } from 'koa';
import { z } from 'zod';
import type { Brand } from '../../brand.js';
import type { Clock } from '../../clock.js';
import type { Database } from '../../db/database.js';
import { ApiError } from '../../http/api-error.js';
import { publicPath } from '../../http/base-path.js';
import { toApiError } from '../../http/error-handler.js';
import { readMultipartForm } from '../../http/multipart-form.js';
import { pageErrorText } from '../../http/page-error-text.js';
import { renderPage } from '../../http/pages.js';
import { requestInfo } from '../../http/request-info.js';
import { pageLanguage, pageMessages } from '../../i18n/page-language.js';
import type { SecurityNotifications } from '../notifications/security-notifications.js';
import { onboardingCookie, type Onboarding } from '../onboarding/onboarding-cookie.js';
import { saveUserLanguage, saveUserName } from '../onboarding/onboarding-profile.js';
import { endOnboarding, holdLiveOnboarding, isOnboardingLive } from '../onboarding/onboardings.js';
import { nextOnboardingStep, onboardingSteps, type OnboardingStep } from '../onboarding/onboarding-steps.js';
import { setFirstPassword } from '../passwords/first-password.js';
import { findPasswordHash } from '../passwords/password-credential.js';
import type { PasswordHashing } from '../passwords/password-hash.js';
import { maximumPasswordLength, minimumPasswordLength } from '../passwords/password-policy.js';
import { avatarTooLarge, checkAvatarImage, maximumAvatarBytes } from '../users/avatar-image.js';
import { saveAvatar } from '../users/avatars.js';
import { findUserById, type User } from '../users/user.js';

export interface OnboardingPageDependencies {
  db: Database;
  clock: Clock;
  notifications: SecurityNotifications;
  passwordHashing: PasswordHashing;
  /** The service's public origin: the avatar's address in the `picture` claim is absolute. */
  issuer: string;
  brand: Brand;
}

const languagePattern = /^[a-z]{2}(-[A-Za-z]{2,4})?$/;
const skipFlag = z.string().max(10).optional();
const nameForm = z.object({
  given_name: z.string().max(1000).default(''),
  family_name: z.string().max(1000).default(''),
});
const languageForm = z.object({ language: z.string().max(35).optional(), skip: skipFlag });
const passwordForm = z.object({
  password: z.string().max(1024).default(''),
  passwordConfirmation: z.string().max(1024).default(''),
  skip: skipFlag,
});
const stepQuery = z.object({ step: z.enum(onboardingSteps).optional() });
const onboardingExpired = () => new ApiError(400, 'onboarding_expired', 'This page has expired.');

/** A name part as people write it: trimmed, inner runs of spaces as one, at most 100 characters. */
const namePart = (value: string) => value.normalize('NFC').trim().replace(/\s+/g, ' ');

/**
 * /:lang/auth/onboarding: the steps after a registration through the pages (spec: "post-registration
 * onboarding"): the name, a photo, the language, a password for an account without one; then on to
 * where the registration was going (the OIDC interaction: consent, then the client; or the service's
 * own page). Each step is one server-rendered form that works without script. Who is onboarded is the
 * signed cookie the finished registration set (onboarding-cookie.ts).
 */
export function onboardingPageRoutes(deps: OnboardingPageDependencies): Router {
  const { db, clock } = deps;
  const router = new Router({ prefix: '/:lang/auth/onboarding' });
  const forms = pageForms('16kb');

  router.use(async (ctx, next) => {
    if (!languagePattern.test(ctx.params.lang ?? '')) return;
    await next();
  });

  const stepPath = (lang: string, step: OnboardingStep) => `/${lang}/auth/onboarding?step=${step}`;

  /**
   * The onboarded account, or the "expired" page: no cookie, expired, the account gone or disabled, or
   * the onboarding ended (finished, or the user's sessions ended since: a copied cookie acts no more).
   */
  const current = async (ctx: Context): Promise<{ onboarding: Onboarding; user: User } | undefined> => {
    const now = clock.now();
    const onboarding = onboardingCookie.read(ctx, now);
    const live = onboarding && (await isOnboardingLive(db, onboarding.id, onboarding.userId, now));
    const user = live && (await findUserById(db, onboarding.userId));
    if (onboarding && user && user.status === 'active') return { onboarding, user };
    renderExpired(ctx);
    return undefined;
  };

  const renderExpired = (ctx: Context) => {
    const lang = pageLanguage(ctx);
    const error = onboardingExpired();
    renderPage(
      ctx,
      'error',
      {
        lang,
        brand: deps.brand,
        error: error.code,
        description: pageErrorText(lang, error),
        backUrl: publicPath(ctx, `/${lang}/auth`),
      },
      error.status,
    );
  };

  const render = (
    ctx: Context,
    step: OnboardingStep,
    user: User,
    data: Record<string, unknown> = {},
    error?: ApiError,
  ) => {
    const lang = pageLanguage(ctx);
    renderPage(
      ctx,
      'onboarding',
      {
        lang,
        brand: deps.brand,
        step,
        action: publicPath(ctx, `/${lang}/auth/onboarding/${step}`),
        givenName: user.givenName ?? '',
        familyName: user.familyName ?? '',
        identifier: user.email ?? user.phone ?? '',
        languages: pageMessages().languages.map((code) => ({
          code,
          name: pageMessages().format(code, 'common.language.name'),
          checked: code === (user.language ?? lang),
        })),
        minLength: minimumPasswordLength,
        maxLength: maximumPasswordLength,
        maxAvatarMegabytes: maximumAvatarBytes / (1024 * 1024),
        error: error && pageErrorText(lang, error, { max: String(maximumAvatarBytes / (1024 * 1024)) }),
        ...data,
        switchTarget: stepPath(lang, step),
      },
      error?.status ?? 200,
    );
  };

  /** On to the next step (in `lang`, which the language step may just have changed), or out. */
  const advance = async (ctx: Context, step: OnboardingStep, onboarding: Onboarding, lang: string) => {
    const hasPassword = Boolean(await findPasswordHash(db, onboarding.userId));
    const next = nextOnboardingStep(step, { hasPassword });
    ctx.status = 303;
    if (next) return ctx.redirect(publicPath(ctx, stepPath(lang, next)));
    const user = await findUserById(db, onboarding.userId);
    // The name is not optional: nobody leaves onboarding without one.
    if (!user?.givenName || !user.familyName) return ctx.redirect(publicPath(ctx, stepPath(lang, 'name')));
    await endOnboarding(db, onboarding.id);
    onboardingCookie.clear(ctx);
    if (onboarding.returnTo) {
      const local = onboarding.returnTo.startsWith('/') ? publicPath(ctx, onboarding.returnTo) : undefined;
      return ctx.redirect(local ?? onboarding.returnTo);
    }
    renderPage(ctx, 'signed-in', {
      lang,
      brand: deps.brand,
      name: [user.givenName, user.familyName].join(' '),
      switchTarget: `/${lang}/auth`,
    });
  };

  /** Runs a step's action; a refusal shows the same step again with the reason, tied to its input. */
  const attempt = async (ctx: Context, action: () => Promise<void>, refused: (error: ApiError) => void) => {
    try {
      await action();
    } catch (caught) {
      const error = toApiError(caught);
      if (error.status >= 500) throw caught;
      refused(error);
    }
  };

  router.get('/', async (ctx) => {
    const found = await current(ctx);
    if (!found) return;
    const query = stepQuery.safeParse(ctx.query);
    const step = (query.success && query.data.step) || 'name';
    if (step === 'password' && (await findPasswordHash(db, found.user.id))) {
      return advance(ctx, step, found.onboarding, pageLanguage(ctx));
    }
    render(ctx, step, found.user);
  });

  router.post('/name', forms, async (ctx) => {
    const found = await current(ctx);
    if (!found) return;
    const form = nameForm.parse(ctx.request.body ?? {});
    const name = { givenName: namePart(form.given_name), familyName: namePart(form.family_name) };
    await attempt(
      ctx,
      async () => {
        const missing = [
          name.givenName ? undefined : 'given_name',
          name.familyName ? undefined : 'family_name',
        ].filter(Boolean);
        if (missing.length > 0 || [name.givenName, name.familyName].some((part) => [...part].length > 100)) {
          throw new ApiError(400, 'name_required', 'Enter your first and last name.', { fields: missing });
        }
        await db.transaction((trx) => saveUserName(trx, found.user.id, name, clock.now()));
        await advance(ctx, 'name', found.onboarding, pageLanguage(ctx));
      },
      (error) => {
        const fields = (error.details as { fields?: string[] } | undefined)?.fields ?? [];
        render(
          ctx,
          'name',
          found.user,
          {
            givenName: name.givenName,
            familyName: name.familyName,
            invalid: fields.length > 0 ? fields : ['given_name', 'family_name'],
          },
          error,
        );
      },
    );
  });

  router.post('/avatar', async (ctx) => {
    const found = await current(ctx);
    if (!found) return;
    await attempt(
      ctx,
      async () => {
        // A body far over the limit is not read at all; up to it, the file's own size is judged.
        if (Number(ctx.get('content-length')) > 4 * maximumAvatarBytes) throw avatarTooLarge();
        const form = await readMultipartForm(ctx.req, { maxFileBytes: maximumAvatarBytes });
        if (form.fields.skip) return advance(ctx, 'avatar', found.onboarding, pageLanguage(ctx));
        const image = await checkAvatarImage(
          form.files.avatar ?? { bytes: Buffer.alloc(0), truncated: false },
        );
        // The upload is read after the onboarding was looked at, as slowly as its sender likes: one
        // begun with a copy of the cookie before the owner's logout must not land after it.
        await saveAvatar(db, found.user.id, image, deps.issuer, clock.now(), async (trx) =>
          (await holdLiveOnboarding(trx, found.onboarding.id, found.user.id, clock.now()))
            ? undefined
            : onboardingExpired(),
        );
        await advance(ctx, 'avatar', found.onboarding, pageLanguage(ctx));
      },
      (error) =>
        error.code === 'onboarding_expired'
          ? renderExpired(ctx)
          : render(ctx, 'avatar', found.user, {}, error),
    );
  });

  router.post('/language', forms, async (ctx) => {
    const found = await current(ctx);
    if (!found) return;
    const form = languageForm.parse(ctx.request.body ?? {});
    if (form.skip) return advance(ctx, 'language', found.onboarding, pageLanguage(ctx));
    await attempt(
      ctx,
      async () => {
        const language = form.language;
        if (!language || !pageMessages().languages.includes(language)) {
          throw new ApiError(400, 'unknown_language', 'Choose one of the offered languages.');
        }
        await saveUserLanguage(db, found.user.id, language, clock.now());
        // The chosen language applies from the next step on.
        await advance(ctx, 'language', found.onboarding, language);
      },
      (error) => render(ctx, 'language', found.user, {}, error),
    );
  });

  router.post('/password', forms, async (ctx) => {
    const found = await current(ctx);
    if (!found) return;
    const form = passwordForm.parse(ctx.request.body ?? {});
    if (form.skip) return advance(ctx, 'password', found.onboarding, pageLanguage(ctx));
    await attempt(
      ctx,
      async () => {
        await setFirstPassword(deps, {
          userId: found.user.id,
          newPassword: form.password,
          newPasswordConfirmation: form.passwordConfirmation,
          request: requestInfo(ctx),
          // Ended while the password was hashed (a logout, a sign-out everywhere): nothing is written.
          holdStanding: async (trx) =>
            (await holdLiveOnboarding(trx, found.onboarding.id, found.user.id, clock.now()))
              ? undefined
              : onboardingExpired(),
        });
        await advance(ctx, 'password', found.onboarding, pageLanguage(ctx));
      },
      (error) =>
        error.code === 'onboarding_expired'
          ? renderExpired(ctx)
          : render(ctx, 'password', found.user, {}, error),
    );
  });

  return router;
}
