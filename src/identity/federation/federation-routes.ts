import Router from '@koa/router';
import { pageForms } from '../../http/page-forms.js';
import type { Context } from 'koa';
import type { Provider } from 'oidc-provider';
import { z } from 'zod';
import type { Brand } from '../../brand.js';
import type { Clock } from '../../clock.js';
import { constantTimeEqual } from '../../crypto/digest.js';
import type { Database } from '../../db/database.js';
import { ApiError } from '../../http/api-error.js';
import { publicPath } from '../../http/base-path.js';
import { renderPage } from '../../http/pages.js';
import { requestInfo } from '../../http/request-info.js';
import type { Messages } from '../../i18n/messages.js';
import type { Logger } from '../../logger.js';
import { auditEventTypes, writeAuditEvent } from '../audit/audit-log.js';
import type { SecurityNotifications } from '../notifications/security-notifications.js';
import { browserNameOf } from '../sessions/browser-name.js';
import { bindDeviceAtSignIn } from '../sessions/bind-device.js';
import { readDeviceCookie, setDeviceCookie } from '../sessions/device-bindings.js';
import { findUserById, type User } from '../users/user.js';
import { completeSignIn } from '../sessions/complete-sign-in.js';
import type { SessionPolicy } from '../sessions/session-policy.js';
import { findActiveSession } from '../sessions/sessions.js';
import type { MainAuthSigning } from '../sessions/main-auth-tokens.js';
import { setRefreshCookie } from '../sessions/refresh-cookie.js';
import { liveOAuthStep } from '../auth-flow/flow-session.js';
import type { UserFunnelPlanner } from '../auth-flow/user-funnel.js';
import { findLinkedProvider, linkProvider, resolveFederatedSignIn } from './federated-accounts.js';
import { federationCookies, attemptLifetimeMs, pendingLinkLifetimeMs } from './federation-cookies.js';
import { FederationError } from './federation-error.js';
import { recordStepResult } from './federation-step-results.js';
import { returnAddressWithProof } from './step-return-address.js';
import type { OAuthProvider } from './oauth-provider-config.js';
import type { OAuthProviderRegistry } from './oauth-provider-registry.js';
import { UpstreamClient } from './upstream-client.js';
import type { UpstreamIdentity } from './upstream-identity.js';

export interface FederationDependencies {
  provider: Provider;
  db: Database;
  clock: Clock;
  registry: OAuthProviderRegistry;
  messages: Messages;
  notifications: SecurityNotifications;
  logger: Logger;
  /** Our public origin: the callback address registered at each provider is built from it. */
  issuer: string;
  /** Main-auth sessions: a sign-in started outside an OIDC interaction (the /:lang/auth page) ends in one. */
  signing: MainAuthSigning;
  /** When a main-auth session has ended (a link from the security settings needs its session live). */
  sessionPolicy: SessionPolicy;
  apiPrefix: string;
  /** The pages' brand (the "signed in" page of a sign-in with no place to return to). */
  brand: Brand;
  /** What a user's login asks (a button refuses an account whose login asks for a second proof). */
  planner: UserFunnelPlanner;
}

/** The OIDC `amr` value of a sign-in through a third-party provider (RFC 8176: federated). */
export const federatedAmr = 'fed';

/** The address each provider sends the browser back to (register it at the provider). */
export const callbackPathOf = (providerId: string) => `/oauth/providers/${providerId}/callback`;
const startPathOf = (uid: string, providerId: string) => `/interaction/${uid}/oauth/${providerId}`;
const linkPathOf = (uid: string) => `/interaction/${uid}/oauth-link`;

const linkDecision = z.object({ decision: z.enum(['link', 'cancel']) });

/** Where a sign-in outside an interaction returns: a path of this service (never another site). */
export const returnToSchema = z
  .string()
  .max(2000)
  .regex(/^\/(?![/\\])[^\s]*$/, 'must be a path of this service')
  .optional();

/** The token of a funnel's `oauth` step (randomSecret: base64url). */
const stepTokenSchema = z
  .string()
  .regex(/^[A-Za-z0-9_-]{20,100}$/)
  .optional();

type Interaction = Awaited<ReturnType<Provider['interactionDetails']>>;

/**
 * Sign-in through third-party identity providers (plugin kind oauth_provider) on the OIDC interaction
 * pages: the buttons, the start (`GET /interaction/:uid/oauth/:provider`), the callback every provider
 * returns to (`GET /oauth/providers/:provider/callback`), and the confirmation of a link the provider did
 * not vouch for (`/interaction/:uid/oauth-link`). See docs/federation.md.
 */
export class Federation {
  readonly #clients = new Map<string, UpstreamClient>();

  constructor(private readonly deps: FederationDependencies) {
    for (const provider of deps.registry.all()) {
      this.#clients.set(
        provider.id,
        new UpstreamClient(provider, `${deps.issuer}${callbackPathOf(provider.id)}`),
      );
    }
  }

  /** The language of our pages: the interaction's ui_locales, then the browser's. */
  language(ctx: Context, uiLocales?: unknown): string {
    const requested = typeof uiLocales === 'string' ? uiLocales.split(' ') : [];
    return this.deps.messages.pick(...requested, ...(ctx.acceptsLanguages() as string[]));
  }

  /** The login buttons of an interaction page (views/partials/third-party-sign-in.eta). */
  buttons(ctx: Context, uid: string, language: string) {
    const { messages } = this.deps;
    return {
      or: messages.format(language, 'federation.or'),
      buttons: this.deps.registry.all().map((provider) => ({
        id: provider.id,
        href: publicPath(ctx, startPathOf(uid, provider.id)),
        label: messages.format(language, 'federation.button', { provider: provider.name }),
      })),
    };
  }

  routes(): Router {
    const router = new Router();
    const forms = pageForms('4kb');

    router.get('/interaction/:uid/oauth/:provider', async (ctx) => {
      const interaction = await this.#interaction(ctx);
      if (!interaction) return this.#fail(ctx, new FederationError('expired_attempt'));
      const client = this.#clients.get(ctx.params.provider!);
      const language = this.language(ctx, interaction.params.ui_locales);
      if (!client)
        return this.#fail(ctx, new FederationError('unknown_provider'), { uid: interaction.uid, language });
      try {
        const { url, checks } = await client.authorizationRequest();
        federationCookies.setAttempt(ctx, {
          provider: client.provider.id,
          ...checks,
          interactionUid: interaction.uid,
          expiresAt: this.deps.clock.now().getTime() + attemptLifetimeMs,
        });
        ctx.status = 303;
        ctx.redirect(url.href);
      } catch (error) {
        return this.#fail(ctx, error, { uid: interaction.uid, language, provider: client.provider });
      }
    });

    router.get('/oauth/providers/:provider/start', async (ctx) => {
      const client = this.#clients.get(ctx.params.provider!);
      const language = this.language(ctx, ctx.query.lang);
      if (!client) return this.#fail(ctx, new FederationError('unknown_provider'), { language });
      const returnTo = returnToSchema.safeParse(ctx.query.return_to);
      if (!returnTo.success) {
        throw new ApiError(400, 'invalid_return_to', 'return_to must be a path of this service.');
      }
      const stepToken = stepTokenSchema.safeParse(ctx.query.step);
      if (!stepToken.success)
        throw new ApiError(400, 'invalid_step', 'step is not a token of an oauth step.');
      try {
        const { url, checks } = await client.authorizationRequest();
        federationCookies.setAttempt(ctx, {
          provider: client.provider.id,
          ...checks,
          ...(returnTo.data ? { returnTo: returnTo.data } : {}),
          lang: language,
          ...(stepToken.data ? { stepToken: stepToken.data } : {}),
          expiresAt: this.deps.clock.now().getTime() + attemptLifetimeMs,
        });
        ctx.status = 303;
        ctx.redirect(url.href);
      } catch (error) {
        return this.#fail(ctx, error, { language, provider: client.provider });
      }
    });

    router.get('/oauth/providers/:provider/callback', async (ctx) => {
      const now = this.deps.clock.now();
      const attempt = federationCookies.readAttempt(ctx, now);
      federationCookies.clearAttempt(ctx);
      const client = this.#clients.get(ctx.params.provider!);
      const language = attempt?.lang ?? this.language(ctx);
      if (!client) return this.#fail(ctx, new FederationError('unknown_provider'), { language });
      const context = { uid: attempt?.interactionUid, language, provider: client.provider };
      if (!attempt || attempt.provider !== client.provider.id) {
        return this.#fail(ctx, new FederationError('expired_attempt'), context);
      }
      // The state says which sign-in this answer belongs to: only the one begun in this browser.
      const state = typeof ctx.query.state === 'string' ? ctx.query.state : '';
      if (!constantTimeEqual(state, attempt.state)) {
        return this.#fail(ctx, new FederationError('bad_state'), context);
      }
      try {
        const currentUrl = new URL(ctx.originalUrl, this.deps.issuer);
        const identity = await client.identify(currentUrl, attempt);
        const request = requestInfo(ctx);
        const interactionUid = attempt.interactionUid;
        if (attempt.linkUserId !== undefined)
          return await this.#linkToUser(
            ctx,
            client.provider,
            identity,
            { userId: attempt.linkUserId, sessionId: attempt.linkSessionId },
            attempt.returnTo ?? '/',
          );
        if (attempt.stepToken !== undefined)
          return await this.#signInForStep(
            ctx,
            client.provider,
            identity,
            attempt.stepToken,
            attempt.returnTo ?? '/',
            context,
          );
        if (interactionUid === undefined)
          return await this.#signInToSession(ctx, client.provider, identity, attempt.returnTo, context);
        const signedIn = await this.deps.db.transaction(async (trx) => {
          const outcome = await resolveFederatedSignIn(trx, client.provider.id, identity, request, now, {
            planner: this.deps.planner,
          });
          if (outcome.kind !== 'signed_in') return outcome;
          const device = await bindDeviceAtSignIn(trx, readDeviceCookie(ctx), request, outcome.user.id, now);
          await this.#auditSignIn(trx, outcome.user.id, client.provider, request, now);
          return { ...outcome, device };
        });
        if (signedIn.kind === 'confirm_link') {
          federationCookies.setPendingLink(ctx, {
            provider: client.provider.id,
            subject: identity.subject,
            candidateUserId: signedIn.candidate.id,
            matchedBy: signedIn.matchedBy,
            interactionUid,
            agreed: false,
            expiresAt: now.getTime() + pendingLinkLifetimeMs,
          });
          ctx.status = 303;
          return ctx.redirect(publicPath(ctx, linkPathOf(interactionUid)));
        }
        if (signedIn.outcome === 'linked') this.#announceLink(signedIn.user);
        if (signedIn.device.newDeviceSecret) setDeviceCookie(ctx, signedIn.device.newDeviceSecret);
        if (signedIn.device.firstOnDevice && signedIn.outcome !== 'created') {
          this.#announceNewDevice(signedIn.device.firstOnDevice, ctx, now);
        }
        await this.#finishLogin(ctx, interactionUid, signedIn.user.id);
      } catch (error) {
        return this.#fail(ctx, error, context);
      }
    });

    router.get('/interaction/:uid/oauth-link', async (ctx) => {
      const interaction = await this.#interaction(ctx);
      const now = this.deps.clock.now();
      const link = interaction && federationCookies.readPendingLink(ctx, interaction.uid, now);
      if (!interaction || !link) return this.#fail(ctx, new FederationError('expired_attempt'));
      const language = this.language(ctx, interaction.params.ui_locales);
      const provider = this.deps.registry.get(link.provider);
      const name = provider?.name ?? link.provider;
      const candidate = await this.deps
        .db('users')
        .where({ id: link.candidateUserId })
        .first('email', 'phone');
      const contact = String((link.matchedBy === 'email' ? candidate?.email : candidate?.phone) ?? '');
      const { messages } = this.deps;
      renderPage(ctx, 'federation/confirm-link', {
        lang: language,
        title: messages.format(language, 'federation.link.title', { provider: name }),
        explanation: messages.format(language, `federation.link.${link.matchedBy}`, {
          provider: name,
          contact,
        }),
        agree: messages.format(language, 'federation.link.agree', { provider: name }),
        cancel: messages.format(language, 'federation.link.cancel'),
        action: publicPath(ctx, linkPathOf(interaction.uid)),
      });
    });

    router.post('/interaction/:uid/oauth-link', forms, async (ctx) => {
      const interaction = await this.#interaction(ctx);
      const now = this.deps.clock.now();
      const link = interaction && federationCookies.readPendingLink(ctx, interaction.uid, now);
      if (!interaction || !link) return this.#fail(ctx, new FederationError('expired_attempt'));
      const { decision } = linkDecision.parse(ctx.request.body);
      if (decision === 'link') federationCookies.setPendingLink(ctx, { ...link, agreed: true });
      else federationCookies.clearPendingLink(ctx, interaction.uid);
      // Either way the person now signs in the usual way; an agreed link is made once they have.
      ctx.status = 303;
      ctx.redirect(publicPath(ctx, `/interaction/${interaction.uid}`));
    });

    return router;
  }

  /**
   * Called when the login funnel of an interaction has signed a person in: a link they agreed to is
   * made now that they proved they own the account (in one transaction; refused when the provider
   * account was meanwhile linked to another account). Only to the account the confirmation screen
   * named: a person who signs in to another one links nothing (the provider round trip may not have
   * been theirs: a login forged at the provider). Answers the error page to show instead of finishing,
   * if any.
   */
  async completePendingLink(
    ctx: Context,
    uid: string,
    userId: string,
  ): Promise<{ error: FederationError; provider: string } | undefined> {
    const now = this.deps.clock.now();
    const link = federationCookies.readPendingLink(ctx, uid, now);
    if (!link) return undefined;
    federationCookies.clearPendingLink(ctx, uid);
    if (!link.agreed || link.candidateUserId !== userId) return undefined;
    try {
      const added = await this.deps.db.transaction((trx) =>
        linkProvider(trx, userId, link.provider, link.subject, requestInfo(ctx), now),
      );
      if (added) await this.#announceLinkTo(userId);
      return undefined;
    } catch (error) {
      if (error instanceof FederationError) return { error, provider: link.provider };
      throw error;
    }
  }

  /** The error page of a third-party sign-in, in words (en/ru). */
  renderError(ctx: Context, error: FederationError, uid: string, language: string, providerId?: string) {
    const provider = providerId ? this.deps.registry.get(providerId) : undefined;
    return this.#fail(ctx, error, { uid, language, ...(provider ? { provider } : {}) });
  }

  /**
   * A sign-in started outside an OIDC interaction (the /:lang/auth page): it ends in a main-auth
   * session, created in the transaction that applies the account rules. The refresh token goes into
   * its httpOnly cookie and the browser returns to `returnTo`, whose page gets an access token from
   * POST /auth/refresh. An unconfirmed match can't be confirmed here: the person signs in to the
   * existing account first (nothing is linked).
   */
  async #signInToSession(
    ctx: Context,
    provider: OAuthProvider,
    identity: UpstreamIdentity,
    returnTo: string | undefined,
    context: { uid?: string | undefined; language: string; provider: OAuthProvider },
  ): Promise<void> {
    const { db, clock, signing, apiPrefix } = this.deps;
    const now = clock.now();
    const request = requestInfo(ctx);
    const deviceCookie = readDeviceCookie(ctx);
    const result = await db.transaction(async (trx) => {
      const outcome = await resolveFederatedSignIn(trx, provider.id, identity, request, now, {
        planner: this.deps.planner,
      });
      if (outcome.kind !== 'signed_in') return outcome;
      await this.#auditSignIn(trx, outcome.user.id, provider, request, now);
      const tokens = await completeSignIn(
        trx,
        signing,
        { flow: 'login', userId: outcome.user.id, authMethods: [federatedAmr], request, deviceCookie },
        now,
      );
      return { ...outcome, tokens };
    });
    if (result.kind === 'confirm_link') return this.#fail(ctx, new FederationError('sign_in_first'), context);
    const { tokens } = result;
    if (result.outcome === 'linked') this.#announceLink(result.user);
    setRefreshCookie(ctx, apiPrefix, tokens.refreshToken.value, tokens.refreshToken.expiresAt, now);
    if (tokens.newDeviceSecret) setDeviceCookie(ctx, tokens.newDeviceSecret);
    if (tokens.newDeviceFor && result.outcome !== 'created')
      this.#announceNewDevice(tokens.newDeviceFor, ctx, now);
    if (returnTo === undefined) {
      const { user } = result;
      return renderPage(ctx, 'signed-in', {
        lang: context.language,
        brand: this.deps.brand,
        name: [user.givenName, user.familyName].filter(Boolean).join(' ') || user.email || user.phone || '',
        switchTarget: `/${context.language}/auth`,
      });
    }
    ctx.status = 303;
    ctx.redirect(publicPath(ctx, returnTo));
  }

  /**
   * Linking a provider from the security settings (`POST /security/linked-providers`): the attempt of a
   * signed-in user, bound to this browser by the attempt cookie the request set. Answers the address to
   * send the browser to. The account rules don't run: the provider account is attached to this user, or
   * refused when linked to another account (`subject_linked_elsewhere`). The link is made only while the
   * session that asked for it is live: one ended meanwhile (a password change or reset, "sign out
   * everywhere", a logout) was ended to shut someone out, and must not hand them a way back in.
   */
  async beginLink(
    ctx: Context,
    providerId: string,
    session: { id: string; userId: string },
    returnTo: string,
  ): Promise<URL> {
    const client = this.#clients.get(providerId);
    if (!client) throw new ApiError(404, 'unknown_provider', 'There is no such sign-in provider here.');
    let request;
    try {
      request = await client.authorizationRequest();
    } catch (error) {
      if (error instanceof FederationError) {
        throw new ApiError(502, error.reason, `${client.provider.name} cannot be reached right now.`);
      }
      throw error;
    }
    federationCookies.setAttempt(ctx, {
      provider: client.provider.id,
      ...request.checks,
      returnTo,
      lang: this.language(ctx),
      linkUserId: session.userId,
      linkSessionId: session.id,
      expiresAt: this.deps.clock.now().getTime() + attemptLifetimeMs,
    });
    return request.url;
  }

  async #linkToUser(
    ctx: Context,
    provider: OAuthProvider,
    identity: UpstreamIdentity,
    asked: { userId: string; sessionId: string | undefined },
    returnTo: string,
  ): Promise<void> {
    const { db, clock } = this.deps;
    const now = clock.now();
    const { userId } = asked;
    const added = await db.transaction(async (trx) => {
      // The user's row is the lock every change of sign-in methods takes (unlink checks "the last one").
      const user: { status: string } | undefined = await trx('users')
        .where({ id: userId })
        .forUpdate()
        .first('status');
      if (user?.status !== 'active') throw new FederationError('account_disabled');
      // Locked: an end of the session racing this link either committed before (not found) or waits.
      const session = asked.sessionId
        ? await findActiveSession(trx, asked.sessionId, this.deps.sessionPolicy, now, { lock: 'share' })
        : undefined;
      if (session?.userId !== userId) throw new FederationError('expired_attempt');
      return linkProvider(trx, userId, provider.id, identity.subject, requestInfo(ctx), now);
    });
    if (added) await this.#announceLinkTo(userId);
    this.deps.logger.info({ provider: provider.id, userId }, 'provider linked from the security settings');
    ctx.status = 303;
    ctx.redirect(publicPath(ctx, returnTo));
  }

  /**
   * A sign-in for a funnel's `oauth` step: the account rules run (the rest of the funnel, with its
   * second factor, follows, so an account with an authenticator app may go on) and the account they
   * resolved to waits for the flow holding `stepToken`; the browser returns to `returnTo`, whose page
   * (or client) submits the step. An unconfirmed match is not linked here: sign in to that account first.
   */
  async #signInForStep(
    ctx: Context,
    provider: OAuthProvider,
    identity: UpstreamIdentity,
    stepToken: string,
    returnTo: string,
    context: { uid?: string | undefined; language: string; provider: OAuthProvider },
  ): Promise<void> {
    const { db, clock } = this.deps;
    const now = clock.now();
    const request = requestInfo(ctx);
    const result = await db.transaction(async (trx) => {
      // Only the token of a live flow's step for this provider: the rules below run without rule 0
      // because the rest of that flow's funnel follows. A made-up token (the start address takes any)
      // has no funnel after it: it linked a provider vouching for an owner's email to their account,
      // which then passed the funnel's provider step of a login asking password and provider.
      const step = await liveOAuthStep(trx, stepToken, now);
      if (!step || (step.provider !== undefined && step.provider !== provider.id)) {
        throw new FederationError('expired_attempt');
      }
      // A funnel that identified the person before this step: the provider account must already be
      // theirs. No account rules run (they would link or create an account for a sign-in that fails).
      const identified = step.identifiedUserId;
      if (identified !== undefined) {
        const linked = await findLinkedProvider(trx, provider.id, identity.subject);
        if (linked?.userId !== identified) throw new FederationError('not_linked_to_this_account');
      }
      const outcome = await resolveFederatedSignIn(trx, provider.id, identity, request, now, {
        funnelContinues: true,
      });
      if (outcome.kind !== 'signed_in') return outcome;
      await this.#auditSignIn(trx, outcome.user.id, provider, request, now);
      const proof = await recordStepResult(
        trx,
        { token: stepToken, provider: provider.id, userId: outcome.user.id },
        now,
      );
      return { ...outcome, proof };
    });
    if (result.kind === 'confirm_link') return this.#fail(ctx, new FederationError('sign_in_first'), context);
    if (result.outcome === 'linked') this.#announceLink(result.user);
    // The proof goes to this browser only, in the query (never a fragment, which would follow a
    // redirect off this site): the step is taken with it (federation-step-results.ts).
    const back = returnAddressWithProof(returnTo, result.proof);
    ctx.status = 303;
    ctx.redirect(publicPath(ctx, back));
  }

  /** The login buttons of a page outside an interaction (the /:lang/auth page): they end in a session. */
  sessionButtons(ctx: Context, returnTo: string | undefined, language: string) {
    const { messages } = this.deps;
    const query = new URLSearchParams({ ...(returnTo ? { return_to: returnTo } : {}), lang: language });
    return {
      or: messages.format(language, 'federation.or'),
      buttons: this.deps.registry.all().map((provider) => ({
        id: provider.id,
        href: publicPath(ctx, `/oauth/providers/${provider.id}/start?${query}`),
        label: messages.format(language, 'federation.button', { provider: provider.name }),
      })),
    };
  }

  async #interaction(ctx: Context): Promise<Interaction | undefined> {
    try {
      const interaction = await this.deps.provider.interactionDetails(ctx.req, ctx.res);
      return interaction.uid === ctx.params.uid && interaction.prompt.name === 'login'
        ? interaction
        : undefined;
    } catch {
      return undefined;
    }
  }

  async #finishLogin(ctx: Context, uid: string, accountId: string): Promise<void> {
    const { provider } = this.deps;
    const interaction = await provider.Interaction.find(uid);
    if (!interaction || interaction.prompt.name !== 'login') throw new FederationError('expired_attempt');
    interaction.result = { login: { accountId, amr: [federatedAmr], remember: true } };
    // The engine dates its interactions by the system clock; the remaining lifetime is counted by it too.
    await interaction.save(interaction.exp - Math.floor(Date.now() / 1000));
    ctx.status = 303;
    ctx.redirect(interaction.returnTo);
  }

  #auditSignIn(
    trx: Parameters<typeof writeAuditEvent>[0],
    userId: string,
    provider: OAuthProvider,
    request: ReturnType<typeof requestInfo>,
    now: Date,
  ) {
    return writeAuditEvent(
      trx,
      {
        type: auditEventTypes.loginSucceeded,
        userId,
        ip: request.ip,
        userAgent: request.userAgent,
        details: { method: 'oauth_provider', provider: provider.id },
      },
      now,
    );
  }

  /**
   * Tells the owner, once committed, that a provider account became a way into theirs (ASVS 6.3.7):
   * linked from the security settings, by a link they agreed to, or because the provider vouched for
   * the account's email or phone. An intruder's link outlives a password reset; the owner must know.
   */
  #announceLink(user: User) {
    this.deps.notifications.notify(user, { kind: 'auth_method_added', method: 'oauth_provider' });
  }

  async #announceLinkTo(userId: string) {
    const user = await findUserById(this.deps.db, userId);
    if (user) this.#announceLink(user);
  }

  #announceNewDevice(user: User, ctx: Context, now: Date) {
    const request = requestInfo(ctx);
    this.deps.notifications.notify(user, {
      kind: 'new_device_sign_in',
      device: browserNameOf(request.userAgent),
      ip: request.ip,
      at: now,
    });
  }

  #fail(
    ctx: Context,
    caught: unknown,
    context: { uid?: string | undefined; language?: string; provider?: OAuthProvider } = {},
  ): void {
    if (!(caught instanceof FederationError)) throw caught;
    const language = context.language ?? this.language(ctx);
    const { messages } = this.deps;
    const providerName = context.provider?.name ?? '—';
    this.deps.logger.info(
      { reason: caught.reason, provider: context.provider?.id, detail: caught.message },
      'third-party sign-in refused',
    );
    renderPage(
      ctx,
      'federation/error',
      {
        lang: language,
        title: messages.format(language, 'federation.error.title'),
        error: caught.reason,
        description: messages.format(language, `federation.error.${caught.reason}`, {
          provider: providerName,
        }),
        again: messages.format(language, 'federation.error.again'),
        againHref: context.uid ? publicPath(ctx, `/interaction/${context.uid}`) : undefined,
      },
      caught.status,
    );
  }
}
