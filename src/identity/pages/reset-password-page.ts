import Router from '@koa/router';
import { pageForms } from '../../http/page-forms.js';
import type { Context } from 'koa';
import { z } from 'zod';
import type { ApiError } from '../../http/api-error.js';
import { toApiError } from '../../http/error-handler.js';
import { publicPath } from '../../http/base-path.js';
import { pageErrorText } from '../../http/page-error-text.js';
import { renderPage } from '../../http/pages.js';
import { pageLanguage } from '../../i18n/page-language.js';
import { requestInfo } from '../../http/request-info.js';
import type { PasswordDeps } from '../passwords/password-deps.js';
import { maximumPasswordLength, minimumPasswordLength } from '../passwords/password-policy.js';
import { requestPasswordReset, resetPassword, verifyPasswordResetCode } from '../passwords/password-reset.js';

type Stage = 'request' | 'code' | 'password' | 'done';

const languagePattern = /^[a-z]{2}(-[A-Za-z]{2})?$/;
const text = (max: number) => z.string().max(max).default('');
const returnTo = z.string().max(2000).optional();
const requestForm = z.object({
  identifier: text(320),
  transport: z.string().max(50).optional(),
  return_to: returnTo,
});
const codeForm = z.object({ identifier: text(320), code: text(20), return_to: returnTo });
const passwordForm = z.object({
  identifier: text(320),
  code: text(20),
  password: text(1024),
  passwordConfirmation: text(1024),
  return_to: returnTo,
});

/** The interrupted sign-in to return to (a path of this service's /:lang/auth), never another site. */
function signInToReturnTo(value: string | undefined): string | undefined {
  return value && /^\/[a-z]{2}(-[A-Za-z]{2,4})?\/auth(\?|$)/.test(value) ? value : undefined;
}

/**
 * The page /:lang/reset-password (spec: client-facing pages): forgotten password in three forms, with
 * no script: the email or phone, the code, the new password twice. The link in the reset message
 * opens it with `identifier` and `code`, straight at the new-password form. Every form calls the same
 * functions as the /auth/password API, so the same limits apply.
 */
export function resetPasswordPageRoutes(deps: PasswordDeps): Router {
  const router = new Router({ prefix: '/:lang/reset-password' });
  const forms = pageForms('16kb');

  router.use(async (ctx, next) => {
    if (!languagePattern.test(ctx.params.lang ?? '')) return;
    await next();
  });

  const page = (ctx: Context, stage: Stage, data: Record<string, unknown> = {}, error?: ApiError) => {
    const lang = pageLanguage(ctx);
    if (error) for (const [name, value] of Object.entries(error.headers)) ctx.set(name, value);
    const back = signInToReturnTo(
      typeof data.returnTo === 'string'
        ? data.returnTo
        : (ctx.request.body as { return_to?: string })?.return_to,
    );
    // After the reset: on into the sign-in it interrupted (same page, now in this language), or a new one.
    const onward = back ? back.replace(/^\/[^/]+/, `/${lang}`) : `/${lang}/auth`;
    const query = new URLSearchParams(back ? { return_to: back } : {});
    renderPage(
      ctx,
      'reset-password',
      {
        lang,
        stage,
        base: publicPath(ctx, `/${lang}/reset-password`),
        minLength: minimumPasswordLength,
        maxLength: maximumPasswordLength,
        error: error && pageErrorText(lang, error),
        ...data,
        returnTo: back,
        onwardUrl: publicPath(ctx, onward),
        switchTarget: `/${lang}/reset-password${back ? `?${query}` : ''}`,
      },
      error?.status ?? 200,
    );
  };

  /** Runs a form's action; a refusal shows `fallback`'s form again with the reason. */
  const attempt = async (ctx: Context, action: () => Promise<void>, fallback: (error: ApiError) => void) => {
    try {
      await action();
    } catch (caught) {
      const error = toApiError(caught);
      if (error.status >= 500) throw caught;
      fallback(error);
    }
  };

  router.get('/', (ctx) => {
    const query = z
      .object({
        identifier: z.string().max(320).optional(),
        code: z.string().max(20).optional(),
        return_to: returnTo,
      })
      .safeParse(ctx.query);
    const { identifier, code, return_to } = query.success ? query.data : {};
    if (identifier && code) return page(ctx, 'password', { identifier, code, returnTo: return_to });
    return page(ctx, 'request', { identifier: identifier ?? '', returnTo: return_to });
  });

  router.post('/request', forms, async (ctx) => {
    const form = requestForm.parse(ctx.request.body ?? {});
    await attempt(
      ctx,
      async () => {
        const outcome = await requestPasswordReset(deps, {
          identifier: form.identifier,
          transport: form.transport || undefined,
          lang: pageLanguage(ctx),
          ...requestInfo(ctx),
        });
        if (outcome.status === 'choose_transport') {
          return page(ctx, 'request', { identifier: form.identifier, transports: outcome.transports });
        }
        page(ctx, 'code', { identifier: form.identifier, sent: true });
      },
      (error) => page(ctx, 'request', { identifier: form.identifier }, error),
    );
  });

  router.post('/code', forms, async (ctx) => {
    const form = codeForm.parse(ctx.request.body ?? {});
    await attempt(
      ctx,
      async () => {
        await verifyPasswordResetCode(deps, { ...form, addressBlock: requestInfo(ctx).addressBlock });
        page(ctx, 'password', form);
      },
      (error) =>
        error.code === 'code_expired'
          ? page(ctx, 'request', { identifier: form.identifier }, error)
          : page(ctx, 'code', { identifier: form.identifier }, error),
    );
  });

  router.post('/password', forms, async (ctx) => {
    const form = passwordForm.parse(ctx.request.body ?? {});
    await attempt(
      ctx,
      async () => {
        await resetPassword(deps, { ...form, ...requestInfo(ctx) });
        page(ctx, 'done');
      },
      (error) => {
        if (error.code === 'code_expired')
          return page(ctx, 'request', { identifier: form.identifier }, error);
        if (error.code === 'invalid_code') return page(ctx, 'code', { identifier: form.identifier }, error);
        page(ctx, 'password', { identifier: form.identifier, code: form.code }, error);
      },
    );
  });

  return router;
}
