import Router from '@koa/router';
import { pageForms } from '../../http/page-forms.js';
import type { Context } from 'koa';
import { errors, type InteractionResults, type Provider } from 'oidc-provider';
import { z } from 'zod';
import type { Clock } from '../../clock.js';
import { sha256 } from '../../crypto/digest.js';
import type { Database } from '../../db/database.js';
import { ApiError } from '../../http/api-error.js';
import { publicPath } from '../../http/base-path.js';
import { logFailure, toApiError } from '../../http/error-handler.js';
import { lockoutTexts, pageErrorText } from '../../http/page-error-text.js';
import { renderPage } from '../../http/pages.js';
import { RateLimitExceeded, type RateLimits } from '../../http/rate-limit.js';
import { requestInfo } from '../../http/request-info.js';
import { pageLanguage, pageMessages } from '../../i18n/page-language.js';
import type { AuthFlowEngine, FlowInProgress } from '../../identity/auth-flow/flow-engine.js';
import { flowStepRateLimit } from '../../identity/auth-flow/flow-rate-limits.js';
import type { FlowKind } from '../../identity/auth-flow/flow-session.js';
import { bindDeviceAtSignIn } from '../../identity/sessions/bind-device.js';
import { browserNameOf } from '../../identity/sessions/browser-name.js';
import { completeSignIn } from '../../identity/sessions/complete-sign-in.js';
import {
  findDeviceBinding,
  readDeviceCookie,
  setDeviceCookie,
} from '../../identity/sessions/device-bindings.js';
import type { MainAuthSigning } from '../../identity/sessions/main-auth-tokens.js';
import { setRefreshCookie } from '../../identity/sessions/refresh-cookie.js';
import { listSavedAccounts, removeSavedAccount } from '../../identity/sessions/saved-accounts.js';
import type { SecurityNotifications } from '../../identity/notifications/security-notifications.js';
import type { Federation } from '../../identity/federation/federation-routes.js';
import { findUserById } from '../../identity/users/user.js';
import { onboardingCookie, onboardingLifetimeMs } from '../../identity/onboarding/onboarding-cookie.js';
import { startOnboardingRecord } from '../../identity/onboarding/onboardings.js';
import type { Logger } from '../../logger.js';
import { allowedScopesOf } from '../client-metadata.js';
import { allowPluginFrames } from '../../identity/plugin-steps/frame-policy.js';
import { authPagePath } from '../auth-page-path.js';
import { finishedSignIns } from '../finished-sign-ins.js';
import { flowBrowser } from '../flow-browser.js';
import { saveConsent } from '../models/consent.js';
import { isOidcScope, splitScope } from '../scopes.js';
import type { Brand } from '../../brand.js';

export interface InteractionDependencies {
  provider: Provider;
  db: Database;
  clock: Clock;
  flows: AuthFlowEngine;
  /** When given, the step limit of /auth/flow/step (per IP + flow session) applies to the pages too. */
  rateLimits?: RateLimits;
  apiAudience: string;
  /** A sign-in on a device the account never used is announced to the user. */
  notifications: SecurityNotifications;
  /** Third-party sign-in: the provider buttons, and the link a person agreed to before signing in. */
  federation?: Federation;
  logger: Logger;
  /** For a sign-in to the service itself (no interaction): the main-auth session and its refresh cookie. */
  signing: MainAuthSigning;
  apiPrefix: string;
  brand: Brand;
}

type Interaction = Awaited<ReturnType<Provider['interactionDetails']>>;

const uid = z.string().min(1).max(100);
const pageQuery = z.object({
  interaction: uid.optional(),
  register: z.literal('1').optional(),
  return_to: z.string().max(2000).optional(),
  account: z.uuid().optional(),
  /** Back from a provider of the funnel's `oauth` step: the flow to go on with. */
  flow: z.string().min(1).max(200).optional(),
  /** ... with the proof the provider's callback gave this browser. */
  oauth_proof: z.string().max(100).optional(),
});
const stepForm = z
  .object({
    flow: z.string().min(1).max(100),
    step: z.string().min(1).max(500),
    interaction: uid.optional(),
    return_to: z.string().max(2000).optional(),
  })
  .loose();
const consentForm = z.object({ interaction: uid, decision: z.enum(['allow', 'deny']) });

/** A place in this service to go back to after a direct sign-in: a path of ours, never another site. */
function localPath(value: string | undefined): string | undefined {
  return value && /^\/(?![/\\])/.test(value) ? value : undefined;
}

/** Who the page is for: the language, the OIDC interaction it serves (if any), where to go afterwards. */
interface PageRequest {
  lang: string;
  interaction?: Interaction | undefined;
  returnTo?: string | undefined;
}

/**
 * /:lang/auth, the one page of login and registration (spec: client-facing pages). It runs the
 * auth-flow engine one screen at a time, for an OIDC interaction (`?interaction=<uid>`: /oauth/authorize
 * sends the person here; the flow ends in consent, then back to the client) or for the service itself
 * (no interaction: a main-auth session, its refresh cookie, then `return_to`). `?register=1`, or the
 * client's `prompt=create`, opens registration. The interaction is bound to the browser by the engine's
 * signed, SameSite=Lax interaction cookie, and every flow the page starts to the browser's own cookie
 * (flow-browser.ts), with or without an interaction: a cross-site form post carries neither, and a
 * flow begun elsewhere can't be finished here (login CSRF).
 */
export function interactionRoutes(deps: InteractionDependencies): Router {
  const { provider, db, clock, flows, rateLimits, apiAudience, notifications, federation, logger } = deps;
  const router = new Router();
  const forms = pageForms('16kb');

  router.use(async (ctx, next) => {
    // `/:lang/...` is a language (two letters, maybe a region), else not ours: the next router's.
    if (ctx.params.lang !== undefined && !languageSegment.test(ctx.params.lang)) return;
    try {
      await next();
    } catch (caught) {
      const lang = pageLanguage(ctx);
      if (caught instanceof errors.SessionNotFound || caught instanceof InteractionMismatch) {
        // The back button after a finished sign-in: back to the application, not "expired".
        const uid =
          ctx.query.interaction ?? (ctx.request.body as { interaction?: unknown } | undefined)?.interaction;
        const application = finishedSignIns.destination(ctx, uid);
        if (application) {
          ctx.status = 303;
          return ctx.redirect(application);
        }
        const error = new ApiError(400, 'interaction_expired', 'This sign-in page has expired.');
        return renderPage(
          ctx,
          'error',
          { error: error.code, description: pageErrorText(lang, error) },
          error.status,
        );
      }
      const error = toApiError(caught);
      logFailure(logger, ctx, caught, error.status);
      for (const [name, value] of Object.entries(error.headers)) ctx.set(name, value);
      renderPage(
        ctx,
        'error',
        {
          error: error.code,
          description: pageErrorText(lang, error),
          backUrl: publicPath(ctx, `/${lang}/auth`),
        },
        error.status,
      );
    }
  });

  /** The interaction of this browser (its cookie), which must be the one the page names. */
  const details = async (ctx: Context, expected: string): Promise<Interaction> => {
    const interaction = await provider.interactionDetails(ctx.req, ctx.res);
    if (interaction.uid !== expected) throw new InteractionMismatch();
    return interaction;
  };

  const clientOf = async (interaction: Interaction | undefined) => {
    if (!interaction) return undefined;
    const client = await provider.Client.find(String(interaction.params.client_id));
    return {
      name: client?.clientName ?? String(interaction.params.client_id),
    };
  };

  const href = (ctx: Context, page: PageRequest, extra: Record<string, string | undefined> = {}) =>
    publicPath(
      ctx,
      authPagePath(page.lang, {
        interaction: page.interaction?.uid,
        return_to: page.returnTo,
        ...extra,
      }),
    );

  const renderStep = async (ctx: Context, page: PageRequest, flow: FlowInProgress, error?: ApiError) => {
    const { lang } = page;
    const registration = flow.session.flow === 'registration';
    const loginHint = page.interaction?.params.login_hint;
    const identifier =
      (flow.session.tempData.identifier as string | undefined) ??
      (typeof loginHint === 'string' ? loginHint.slice(0, 320) : undefined);
    // A 2xx "error" is a step asking for more (otp-code: "code sent"); a lockout carries the wait.
    const text = error && pageErrorText(lang, error, { identifier: identifier ?? '' });
    const notice = error && error.status < 400 ? text : undefined;
    if (error) for (const [name, value] of Object.entries(error.headers)) ctx.set(name, value);
    const retryAfterSeconds =
      error?.code === 'too_many_attempts' ? Number(error.headers['Retry-After']) : undefined;
    const restartUrl = href(ctx, page, { register: registration ? '1' : undefined });
    const client = await clientOf(page.interaction);
    const common = {
      lang,
      brand: deps.brand,
      action: publicPath(ctx, `/${lang}/auth/step`),
      switchTarget: authPagePath(lang, {
        interaction: page.interaction?.uid,
        return_to: page.returnTo,
        register: registration ? '1' : undefined,
      }),
      interactionUid: page.interaction?.uid,
      flowSessionId: flow.session.id,
      returnTo: page.interaction ? undefined : page.returnTo,
      registration,
      identifier,
      error: notice === undefined ? text : undefined,
      notice,
      retryAfterSeconds,
      lockoutTexts: retryAfterSeconds ? lockoutTexts(lang, retryAfterSeconds) : undefined,
      restartUrl,
      clientName: client?.name,
    };
    const status = error?.status ?? 200;
    const single = flow.screen.length === 1 ? flow.nextStep : undefined;
    if (single === 'phone-email') {
      const device = registration ? undefined : await findDeviceBinding(db, readDeviceCookie(ctx));
      const saved = device ? await listSavedAccounts(db, device) : [];
      return renderPage(
        ctx,
        'interaction/identifier',
        {
          ...common,
          switchFlowUrl: href(ctx, page, { register: registration ? undefined : '1' }),
          savedAccounts: saved.map((account) => ({
            id: account.id,
            name:
              [account.firstName, account.lastName].filter(Boolean).join(' ') ||
              account.email ||
              account.phone,
            contact: account.email ?? account.phone,
            initials:
              [account.firstName, account.lastName]
                .filter(Boolean)
                .map((part) => [...part!][0]!.toUpperCase())
                .join('') || [...(account.email ?? account.phone ?? '?')][0]!.toUpperCase(),
            avatarUrl: account.avatarUrl,
            chooseUrl: href(ctx, page, { account: account.id }),
            removeAction: publicPath(ctx, `/${lang}/auth/saved-accounts/${account.id}/remove`),
          })),
          removeBack: authPagePath(lang, { interaction: page.interaction?.uid, return_to: page.returnTo }),
          thirdPartySignIn: registration
            ? undefined
            : page.interaction
              ? federation?.buttons(ctx, page.interaction.uid, lang)
              : // The service's own sign-in: a session, then this page's return_to (or the "signed in" page).
                federation?.sessionButtons(ctx, page.returnTo, lang),
        },
        status,
      );
    }
    if (single === 'password' && !registration) {
      const back = authPagePath(lang, { interaction: page.interaction?.uid, return_to: page.returnTo });
      return renderPage(
        ctx,
        'interaction/password',
        {
          ...common,
          forgotUrl: publicPath(
            ctx,
            `/${lang}/reset-password?${new URLSearchParams({ identifier: identifier ?? '', return_to: back })}`,
          ),
        },
        status,
      );
    }
    if (single === 'otp-code' && !registration) {
      return renderPage(ctx, 'interaction/otp-code', common, status);
    }
    // Any other step, and group screens: the fields each step describes, on one form. On a group
    // screen each field is named <stepId>[<field>] so every step gets its own input.
    const screens = await flows.describe(flow, { ...requestInfo(ctx), deviceCookie: readDeviceCookie(ctx) });
    for (const screen of screens) {
      if (screen.data?.oauth)
        screen.data = { ...screen.data, oauth: oauthButton(ctx, page, flow, screen.data.oauth) };
    }
    // Plugin steps delivered as frames: their origins may be framed by this page (and no other).
    allowPluginFrames(ctx, screens);
    return renderPage(
      ctx,
      'interaction/step',
      { ...common, step: flow.screen.join('+'), grouped: flow.screen.length > 1, screens },
      status,
    );
  };

  /**
   * The funnel's `oauth` step: its button goes to the provider and comes back to this page with the
   * flow (`?flow=`), which then submits the step.
   */
  const oauthButton = (ctx: Context, page: PageRequest, flow: FlowInProgress, data: unknown) => {
    const oauth = data as { startUrl: string; name: string; provider: string };
    const back = authPagePath(page.lang, {
      interaction: page.interaction?.uid,
      return_to: page.interaction ? undefined : page.returnTo,
      flow: flow.session.id,
    });
    return {
      ...oauth,
      href: `${oauth.startUrl}&${new URLSearchParams({ return_to: back })}`,
      label: pageMessages().format(page.lang, 'federation.button', { provider: oauth.name }),
    };
  };

  const startFlow = (ctx: Context, kind: FlowKind, interaction: Interaction | undefined) => {
    const { ip, userAgent } = requestInfo(ctx);
    return flows.start(kind, {
      interactionUid: interaction?.uid,
      browser: flowBrowser.ensure(ctx),
      lang: pageLanguage(ctx),
      ip,
      userAgent,
    });
  };

  /** Registration when the page or the client (OIDC prompt=create) asks for it. */
  const flowKindFor = (interaction: Interaction | undefined, register: boolean): FlowKind =>
    register ||
    String(interaction?.params.prompt ?? '')
      .split(' ')
      .includes('create')
      ? 'registration'
      : 'login';

  /**
   * A sign-in through these pages binds the browser as the identity API's does (device cookie, account
   * saved on the device): the device becomes the account's own lockout source, which an attacker's
   * failures elsewhere never lock (src/identity/brute-force/login-source.ts), unless another session
   * vouched for the sign-in (a QR approval): a stolen token approves any browser of the thief's.
   */
  const rememberDevice = async (
    ctx: Context,
    userId: string,
    announce: boolean,
    vouchedBySession: boolean,
  ) => {
    const request = requestInfo(ctx);
    const now = clock.now();
    const device = await db.transaction((trx) =>
      bindDeviceAtSignIn(trx, readDeviceCookie(ctx), request, userId, now, vouchedBySession),
    );
    if (device.newDeviceSecret) setDeviceCookie(ctx, device.newDeviceSecret);
    if (device.firstOnDevice && announce) {
      notifications.notify(device.firstOnDevice, {
        kind: 'new_device_sign_in',
        device: browserNameOf(request.userAgent),
        ip: request.ip,
        at: now,
      });
    }
  };

  const finish = async (
    ctx: Context,
    interaction: Interaction,
    result: InteractionResults,
    merge: boolean,
  ) => {
    finishedSignIns.remember(ctx, interaction.uid, interaction.params.redirect_uri);
    const returnTo = await provider.interactionResult(ctx.req, ctx.res, result, {
      mergeWithLastSubmission: merge,
    });
    ctx.status = 303;
    ctx.redirect(returnTo);
  };

  /**
   * After a registration: the onboarding pages, then `returnTo` (onboarding-page.ts). `sessionId`: the
   * main-auth session the registration started (no interaction), which the onboarding ends with.
   */
  const startOnboarding = async (
    ctx: Context,
    lang: string,
    userId: string,
    returnTo: string | undefined,
    sessionId?: string,
  ) => {
    const now = clock.now();
    const expiresAt = new Date(now.getTime() + onboardingLifetimeMs);
    const id = await startOnboardingRecord(db, { userId, sessionId }, expiresAt, now);
    onboardingCookie.start(ctx, { id, userId, returnTo }, now);
    ctx.status = 303;
    ctx.redirect(publicPath(ctx, `/${lang}/auth/onboarding`));
  };

  /** A saved account chosen on the login screen: its identifier, submitted as the first step. */
  const chooseSavedAccount = async (ctx: Context, page: PageRequest, flow: FlowInProgress, id: string) => {
    const device = await findDeviceBinding(db, readDeviceCookie(ctx));
    const account = device
      ? (await listSavedAccounts(db, device)).find((saved) => saved.id === id)
      : undefined;
    const identifier = account?.email ?? account?.phone;
    if (!identifier || flow.nextStep !== 'phone-email') return renderStep(ctx, page, flow);
    return submit(ctx, page, flow.session.id, { 'phone-email': { identifier } });
  };

  router.get('/:lang/auth', async (ctx) => {
    const query = pageQuery.parse(ctx.query);
    const lang = pageLanguage(ctx);
    const interaction = query.interaction ? await details(ctx, query.interaction) : undefined;
    const page: PageRequest = { lang, interaction, returnTo: localPath(query.return_to) };
    if (interaction?.prompt.name === 'consent') return renderConsent(ctx, page, interaction);
    if (interaction && !signInPrompts.has(interaction.prompt.name)) {
      throw new ApiError(400, 'unsupported_prompt', `Prompt ${interaction.prompt.name} is not supported.`);
    }
    if (query.flow) return resumeAfterProvider(ctx, page, query.flow, query.oauth_proof);
    const flow = await startFlow(ctx, flowKindFor(interaction, query.register === '1'), interaction);
    if (query.account) return chooseSavedAccount(ctx, page, flow, query.account);
    return renderStep(ctx, page, flow);
  });

  /** Back from the provider of an `oauth` step: submit it (the callback kept what the provider said). */
  const resumeAfterProvider = async (ctx: Context, page: PageRequest, flowId: string, proof?: string) => {
    let session;
    try {
      session = await flows.resume(flowId, {
        interactionUid: page.interaction?.uid,
        browser: flowBrowser.of(ctx),
      });
    } catch (caught) {
      const error = toApiError(caught);
      if (error.code !== 'flow_session_invalid') throw caught;
      return renderStep(
        ctx,
        page,
        await startFlow(ctx, flowKindFor(page.interaction, false), page.interaction),
        error,
      );
    }
    const flow = flows.inProgress(session);
    if (flow.screen.length === 1 && flow.nextStep === 'oauth') {
      return submit(ctx, page, session.id, { oauth: proof ? { proof } : {} });
    }
    return renderStep(ctx, page, flow);
  };

  const submit = async (
    ctx: Context,
    page: PageRequest,
    flowId: string,
    inputs: Record<string, unknown>,
  ): Promise<void> => {
    const { interaction } = page;
    // The flow goes on only for its interaction and in the browser that started it (login CSRF).
    const binding = { interactionUid: interaction?.uid, browser: flowBrowser.of(ctx) };
    const request = requestInfo(ctx);
    const deviceCookie = readDeviceCookie(ctx);
    let outcome;
    try {
      if (rateLimits) {
        await rateLimits
          .consume(flowStepRateLimit, `${request.addressBlock}:${sha256(flowId)}`)
          .catch((error) => {
            throw error instanceof RateLimitExceeded ? error.toApiError() : error;
          });
      }
      outcome = await flows.submitScreen(
        flowId,
        inputs,
        { ...request, deviceCookie },
        {
          binding,
          // The service's own sign-in: the main-auth session, in the transaction that ends the flow.
          ...(interaction
            ? {}
            : {
                onComplete: (trx, completed) =>
                  completeSignIn(trx, deps.signing, { ...completed, request, deviceCookie }, clock.now()),
              }),
        },
      );
    } catch (caught) {
      const error = toApiError(caught);
      if (error.status >= 500) throw caught;
      if (error.code === 'flow_session_invalid') {
        const kind = flowKindFor(interaction, false);
        return renderStep(ctx, page, await startFlow(ctx, kind, interaction), error);
      }
      // The flow stays where it was: show the same step again with the reason.
      const session = await flows.resume(flowId, binding);
      return renderStep(ctx, page, flows.inProgress(session), error);
    }
    if (outcome.status === 'in_progress') return renderStep(ctx, page, outcome);
    if (interaction) {
      const refusedLink = await federation?.completePendingLink(ctx, interaction.uid, outcome.userId);
      if (refusedLink) {
        return federation!.renderError(
          ctx,
          refusedLink.error,
          interaction.uid,
          page.lang,
          refusedLink.provider,
        );
      }
      await rememberDevice(
        ctx,
        outcome.userId,
        outcome.flow === 'login',
        outcome.startedBySessionId !== undefined,
      );
      // A sign-in whose proof is older than now (a QR approval) keeps its time: no fresh auth_time.
      const ts = outcome.authenticatedAt ? Math.floor(outcome.authenticatedAt.getTime() / 1000) : undefined;
      const login = {
        login: {
          accountId: outcome.userId,
          amr: outcome.authMethods,
          remember: true,
          ...(ts ? { ts } : {}),
          // The engine session ends with the main-auth session that vouched for it (a QR approval).
          ...(outcome.startedBySessionId ? { startedBySessionId: outcome.startedBySessionId } : {}),
        },
      };
      if (outcome.flow === 'registration') {
        // The sign-in is recorded in the interaction now; onboarding comes first, then its resume
        // address (consent, then the client).
        finishedSignIns.remember(ctx, interaction.uid, interaction.params.redirect_uri);
        const resume = await provider.interactionResult(ctx.req, ctx.res, login, {
          mergeWithLastSubmission: false,
        });
        return startOnboarding(ctx, page.lang, outcome.userId, resume);
      }
      return finish(ctx, interaction, login, false);
    }
    const signedIn = outcome.completion!;
    setRefreshCookie(
      ctx,
      deps.apiPrefix,
      signedIn.refreshToken.value,
      signedIn.refreshToken.expiresAt,
      clock.now(),
    );
    if (signedIn.newDeviceSecret) setDeviceCookie(ctx, signedIn.newDeviceSecret);
    if (signedIn.newDeviceFor) {
      notifications.notify(signedIn.newDeviceFor, {
        kind: 'new_device_sign_in',
        device: browserNameOf(request.userAgent),
        ip: request.ip,
        at: clock.now(),
      });
    }
    if (outcome.flow === 'registration') {
      // The onboarding ends with this session (its logout, a revocation): onboardings.ts.
      return startOnboarding(ctx, page.lang, outcome.userId, page.returnTo, signedIn.session.id);
    }
    if (page.returnTo) {
      ctx.status = 303;
      return ctx.redirect(publicPath(ctx, page.returnTo));
    }
    const user = await findUserById(db, outcome.userId);
    renderPage(ctx, 'signed-in', {
      lang: page.lang,
      brand: deps.brand,
      name: [user?.givenName, user?.familyName].filter(Boolean).join(' ') || user?.email || user?.phone || '',
      switchTarget: `/${page.lang}/auth`,
    });
  };

  router.post('/:lang/auth/step', forms, async (ctx) => {
    const form = stepForm.parse(ctx.request.body);
    const lang = pageLanguage(ctx);
    const interaction = form.interaction ? await details(ctx, form.interaction) : undefined;
    if (interaction && !signInPrompts.has(interaction.prompt.name))
      throw new ApiError(409, 'step_out_of_order', 'Sign-in is already done.');
    const body = ctx.request.body as Record<string, unknown>;
    const stepIds = form.step.split('+');
    const inputs =
      stepIds.length > 1
        ? Object.fromEntries(stepIds.map((stepId) => [stepId, body[stepId] ?? {}]))
        : { [form.step]: body };
    await submit(ctx, { lang, interaction, returnTo: localPath(form.return_to) }, form.flow, inputs);
  });

  /** "Remove from this device" on the login screen; back to the same screen. */
  router.post('/:lang/auth/saved-accounts/:id/remove', forms, async (ctx) => {
    const id = z.uuid().safeParse(ctx.params.id);
    const back = z.object({ back: z.string().max(2000).optional() }).parse(ctx.request.body ?? {});
    const device = await findDeviceBinding(db, readDeviceCookie(ctx));
    if (device && id.success) await removeSavedAccount(db, device, id.data, clock.now());
    ctx.status = 303;
    ctx.redirect(publicPath(ctx, localPath(back.back) ?? `/${pageLanguage(ctx)}/auth`));
  });

  /**
   * The scopes the screen names and the consent gives: those not consented yet; and when the screen
   * shows although the person consented before (a native app, whose identity can't be assured, or the
   * client's prompt=consent), every scope asked for: Allow gives them all, and an empty list would
   * hide what an app that claimed the redirect gets (ASVS 5 10.7.2).
   */
  const consentScopes = (interaction: Interaction, allowed: Set<string>): string[] => {
    const missing = (interaction.prompt.details.missingOIDCScope as string[] | undefined) ?? [];
    const askedAgain = interaction.prompt.reasons.some((reason) => consentAskedAgain.has(reason));
    const asked = askedAgain ? splitScope(String(interaction.params.scope ?? '')) : [];
    return [...new Set([...missing, ...asked])].filter((scope) => allowed.has(scope) && isOidcScope(scope));
  };

  const renderConsent = async (ctx: Context, page: PageRequest, interaction: Interaction) => {
    const client = await provider.Client.find(String(interaction.params.client_id));
    if (!client) throw new ApiError(400, 'invalid_client', 'The application is no longer available.');
    const scopes = consentScopes(interaction, new Set(allowedScopesOf(client as never)));
    renderPage(ctx, 'interaction/consent', {
      lang: page.lang,
      brand: deps.brand,
      clientName: client.clientName ?? client.clientId,
      interactionUid: interaction.uid,
      action: publicPath(ctx, `/${page.lang}/auth/consent`),
      switchTarget: authPagePath(page.lang, { interaction: interaction.uid }),
      scopes: scopes.filter((scope) => scope !== 'openid').map((scope) => ({ name: scope })),
    });
  };

  router.post('/:lang/auth/consent', forms, async (ctx) => {
    const form = consentForm.parse(ctx.request.body);
    const interaction = await details(ctx, form.interaction);
    if (interaction.prompt.name !== 'consent')
      throw new ApiError(409, 'step_out_of_order', 'Nothing to consent to.');
    if (form.decision === 'deny') {
      return finish(
        ctx,
        interaction,
        { error: 'access_denied', error_description: 'the user denied access' },
        true,
      );
    }
    const accountId = interaction.session!.accountId;
    const clientId = String(interaction.params.client_id);
    const client = await provider.Client.find(clientId);
    if (!client) throw new ApiError(400, 'invalid_client', 'The application is no longer available.');
    const scopes = consentScopes(interaction, new Set(allowedScopesOf(client as never)));

    const grant =
      (interaction.grantId ? await provider.Grant.find(interaction.grantId) : undefined) ??
      new provider.Grant({ accountId, clientId });
    if (scopes.length > 0) {
      grant.addOIDCScope(scopes.join(' '));
      grant.addResourceScope(apiAudience, scopes.join(' '));
    }
    const grantId = await grant.save();
    await saveConsent(db, accountId, clientId, scopes, clock.now());
    await finish(ctx, interaction, { consent: { grantId } }, true);
  });

  /** The address of the first version of these pages: on to /:lang/auth. */
  router.get('/interaction/:uid', (ctx) => {
    ctx.status = 303;
    ctx.redirect(publicPath(ctx, authPagePath(pageLanguage(ctx), { interaction: ctx.params.uid })));
  });

  return router;
}

class InteractionMismatch extends Error {}

const languageSegment = /^[a-z]{2}(-[A-Za-z]{2,4})?$/;

/** Why the engine shows the consent screen for scopes consented before (its consent prompt's checks). */
const consentAskedAgain = new Set(['native_client_prompt', 'consent_prompt']);

/** The prompts this page answers with a flow (prompt=create rides on login: interaction-policy.ts). */
const signInPrompts = new Set(['login']);
