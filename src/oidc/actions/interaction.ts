import Router from '@koa/router';
import { bodyParser } from '@koa/bodyparser';
import type { Context } from 'koa';
import { errors, type InteractionResults, type Provider } from 'oidc-provider';
import { z } from 'zod';
import type { Clock } from '../../clock.js';
import { sha256 } from '../../crypto/digest.js';
import type { Database } from '../../db/database.js';
import { ApiError } from '../../http/api-error.js';
import { logFailure, renderErrorPage, toApiError } from '../../http/error-handler.js';
import { renderPage } from '../../http/pages.js';
import { RateLimitExceeded, type RateLimits } from '../../http/rate-limit.js';
import { requestInfo } from '../../http/request-info.js';
import type { AuthFlowEngine, FlowInProgress } from '../../identity/auth-flow/flow-engine.js';
import { flowStepRateLimit } from '../../identity/auth-flow/flow-rate-limits.js';
import { bindDeviceAtSignIn } from '../../identity/sessions/bind-device.js';
import { browserNameOf } from '../../identity/sessions/browser-name.js';
import { readDeviceCookie, setDeviceCookie } from '../../identity/sessions/device-bindings.js';
import type { SecurityNotifications } from '../../identity/notifications/security-notifications.js';
import type { Federation } from '../../identity/federation/federation-routes.js';
import type { Logger } from '../../logger.js';
import { allowedScopesOf } from '../client-metadata.js';
import { saveConsent } from '../models/consent.js';
import { interactionPath } from '../provider.js';
import { isOidcScope, scopeDescriptions } from '../scopes.js';

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
}

type Interaction = Awaited<ReturnType<Provider['interactionDetails']>>;

const stepForm = z.object({ flow: z.string().min(1).max(100), step: z.string().min(1).max(500) }).loose();
const consentForm = z.object({ decision: z.enum(['allow', 'deny']) });

/**
 * The pages of an authorization request (`/interaction/:uid`): the login funnel, run by the auth-flow
 * engine one step per page, then the consent screen. The interaction is bound to the browser by the
 * engine's signed, SameSite=Lax interaction cookie, which is also what stops cross-site form posts.
 */
export function interactionRoutes(deps: InteractionDependencies): Router {
  const { provider, db, clock, flows, rateLimits, apiAudience, notifications, federation, logger } = deps;
  const router = new Router({ prefix: '/interaction/:uid' });
  const forms = bodyParser({ enableTypes: ['form'], formLimit: '16kb' });

  router.use(async (ctx, next) => {
    try {
      await next();
    } catch (caught) {
      if (caught instanceof errors.SessionNotFound || caught instanceof InteractionMismatch) {
        renderPage(
          ctx,
          'error',
          {
            error: 'interaction_expired',
            description:
              'This sign-in page has expired or belongs to another browser. Return to the application and start again.',
          },
          400,
        );
        return;
      }
      const error = toApiError(caught);
      logFailure(logger, ctx, caught, error.status);
      renderErrorPage(ctx, error);
    }
  });

  const details = async (ctx: Context): Promise<Interaction> => {
    const interaction = await provider.interactionDetails(ctx.req, ctx.res);
    if (interaction.uid !== ctx.params.uid) throw new InteractionMismatch();
    return interaction;
  };

  const clientName = async (interaction: Interaction): Promise<string> => {
    const client = await provider.Client.find(String(interaction.params.client_id));
    return client?.clientName ?? String(interaction.params.client_id);
  };

  const renderStep = async (
    ctx: Context,
    interaction: Interaction,
    flow: FlowInProgress,
    error?: ApiError,
  ) => {
    const uid = interaction.uid;
    // A 2xx "error" is a step asking for more (otp-code: "code sent"); a lockout carries the wait.
    const notice = error && error.status < 400 ? error.message : undefined;
    if (error) for (const [name, value] of Object.entries(error.headers)) ctx.set(name, value);
    const common = {
      action: `${interactionPath(uid)}/step`,
      flowSessionId: flow.session.id,
      identifier: flow.session.tempData.identifier,
      error: notice === undefined ? error?.message : undefined,
      notice,
      retryAfterSeconds: error?.code === 'too_many_attempts' ? error.headers['Retry-After'] : undefined,
      restartUrl: `${interactionPath(uid)}/restart`,
    };
    const status = error?.status ?? 200;
    const single = flow.screen.length === 1 ? flow.nextStep : undefined;
    if (single === 'phone-email') {
      return renderPage(
        ctx,
        'interaction/identifier',
        {
          ...common,
          clientName: await clientName(interaction),
          thirdPartySignIn: federation?.buttons(
            ctx,
            uid,
            federation.language(ctx, interaction.params.ui_locales),
          ),
        },
        status,
      );
    }
    if (single === 'password') return renderPage(ctx, 'interaction/password', common, status);
    if (single === 'otp-code') return renderPage(ctx, 'interaction/otp-code', common, status);
    // Any other step, and group screens: the fields each step describes, on one form. On a group
    // screen each field is named <stepId>[<field>] so every step gets its own input.
    const screens = await flows.describe(flow, { ...requestInfo(ctx), deviceCookie: readDeviceCookie(ctx) });
    return renderPage(
      ctx,
      'interaction/step',
      {
        ...common,
        step: flow.screen.join('+'),
        grouped: flow.screen.length > 1,
        screens,
      },
      status,
    );
  };

  const startLogin = (ctx: Context, interaction: Interaction) =>
    flows.start('login', { interactionUid: interaction.uid, ...requestInfo(ctx) });

  /**
   * A sign-in through these pages binds the browser as the identity API's does (device cookie, account
   * saved on the device): the device becomes the account's own lockout source, which an attacker's
   * failures elsewhere never lock (src/identity/brute-force/login-source.ts).
   */
  const rememberDevice = async (ctx: Context, userId: string) => {
    const request = requestInfo(ctx);
    const now = clock.now();
    const device = await db.transaction((trx) =>
      bindDeviceAtSignIn(trx, readDeviceCookie(ctx), request, userId, now),
    );
    if (device.newDeviceSecret) setDeviceCookie(ctx, device.newDeviceSecret);
    if (device.firstOnDevice) {
      notifications.notify(device.firstOnDevice, {
        kind: 'new_device_sign_in',
        device: browserNameOf(request.userAgent),
        ip: request.ip,
        at: now,
      });
    }
  };

  const finish = async (ctx: Context, result: InteractionResults, merge: boolean) => {
    const returnTo = await provider.interactionResult(ctx.req, ctx.res, result, {
      mergeWithLastSubmission: merge,
    });
    ctx.status = 303;
    ctx.redirect(returnTo);
  };

  router.get('/', async (ctx) => {
    const interaction = await details(ctx);
    if (interaction.prompt.name === 'login') {
      return renderStep(ctx, interaction, await startLogin(ctx, interaction));
    }
    if (interaction.prompt.name === 'consent') {
      return renderConsent(ctx, interaction);
    }
    throw new ApiError(400, 'unsupported_prompt', `Prompt ${interaction.prompt.name} is not supported.`);
  });

  router.get('/restart', async (ctx) => {
    const interaction = await details(ctx);
    ctx.status = 303;
    ctx.redirect(interactionPath(interaction.uid));
  });

  router.post('/step', forms, async (ctx) => {
    const interaction = await details(ctx);
    if (interaction.prompt.name !== 'login')
      throw new ApiError(409, 'step_out_of_order', 'Sign-in is already done.');
    const form = stepForm.parse(ctx.request.body);
    const body = ctx.request.body as Record<string, unknown>;
    const stepIds = form.step.split('+');
    const inputs =
      stepIds.length > 1
        ? Object.fromEntries(stepIds.map((stepId) => [stepId, body[stepId] ?? {}]))
        : { [form.step]: body };
    let outcome;
    try {
      const request = requestInfo(ctx);
      if (rateLimits) {
        await rateLimits.consume(flowStepRateLimit, `${request.ip}:${sha256(form.flow)}`).catch((error) => {
          throw error instanceof RateLimitExceeded ? error.toApiError() : error;
        });
      }
      const fromDevice = { ...request, deviceCookie: readDeviceCookie(ctx) };
      outcome = await flows.submitScreen(form.flow, inputs, fromDevice, {
        binding: { interactionUid: interaction.uid },
      });
    } catch (caught) {
      const error = toApiError(caught);
      if (error.status >= 500) throw caught;
      if (error.code === 'flow_session_invalid') {
        return renderStep(ctx, interaction, await startLogin(ctx, interaction), error);
      }
      // The flow stays where it was: show the same step again with the reason.
      const session = await flows.resume(form.flow, { interactionUid: interaction.uid });
      return renderStep(ctx, interaction, flows.inProgress(session), error);
    }
    if (outcome.status === 'in_progress') return renderStep(ctx, interaction, outcome);
    const refusedLink = await federation?.completePendingLink(ctx, interaction.uid, outcome.userId);
    if (refusedLink) {
      const language = federation!.language(ctx, interaction.params.ui_locales);
      return federation!.renderError(ctx, refusedLink.error, interaction.uid, language, refusedLink.provider);
    }
    await rememberDevice(ctx, outcome.userId);
    await finish(
      ctx,
      { login: { accountId: outcome.userId, amr: outcome.authMethods, remember: true } },
      false,
    );
  });

  const consentScopes = (interaction: Interaction, allowed: Set<string>): string[] => {
    const missing = (interaction.prompt.details.missingOIDCScope as string[] | undefined) ?? [];
    return missing.filter((scope) => allowed.has(scope) && isOidcScope(scope));
  };

  const renderConsent = async (ctx: Context, interaction: Interaction) => {
    const client = await provider.Client.find(String(interaction.params.client_id));
    if (!client) throw new ApiError(400, 'invalid_client', 'The application is no longer available.');
    const scopes = consentScopes(interaction, new Set(allowedScopesOf(client as never)));
    renderPage(ctx, 'interaction/consent', {
      clientName: client.clientName ?? client.clientId,
      action: `${interactionPath(interaction.uid)}/consent`,
      scopes: scopes
        .filter((scope) => scope !== 'openid')
        .map((scope) => ({
          name: scope,
          description: scopeDescriptions[scope as keyof typeof scopeDescriptions],
        })),
    });
  };

  router.post('/consent', forms, async (ctx) => {
    const interaction = await details(ctx);
    if (interaction.prompt.name !== 'consent')
      throw new ApiError(409, 'step_out_of_order', 'Nothing to consent to.');
    const { decision } = consentForm.parse(ctx.request.body);
    if (decision === 'deny') {
      return finish(ctx, { error: 'access_denied', error_description: 'the user denied access' }, true);
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
    await finish(ctx, { consent: { grantId } }, true);
  });

  return router;
}

class InteractionMismatch extends Error {}
