import { z } from 'zod';
import { randomSecret } from '../../../crypto/digest.js';
import { ApiError } from '../../../http/api-error.js';
import { takeStepResult } from '../../federation/federation-step-results.js';
import type { OAuthProviderRegistry } from '../../federation/oauth-provider-registry.js';
import { stepSettingsOf, type AuthFlowStep, type StepContext } from '../step.js';

/** The OIDC `amr` value of a sign-in through a third-party provider (RFC 8176: federated). */
const federatedAmr = 'fed';

/** The built-in step that signs in through a provider inside the funnel. */
export const oauthStepId = 'oauth';

/** Where the browser starts the provider sign-in of this step (the client adds `return_to`). */
export const oauthStepStartPath = (providerId: string, token: string) =>
  `/oauth/providers/${encodeURIComponent(providerId)}/start?${new URLSearchParams({ step: token })}`;

/**
 * Built-in step `oauth` (login): a third-party provider as one step of the funnel, configured with the
 * provider's id (`settings: { "provider": "google" }`). The screen gives the address that sends the
 * browser to the provider (`data.oauth.startUrl`, plus `return_to`); the callback applies the account
 * rules, keeps the account it resolved to for this flow's token and returns the browser with a proof
 * (`oauth_proof`); the client then submits this step with `{ proof }`, which takes that account once
 * and lets the rest of the funnel run (e.g. a TOTP step). Before the provider answered, or without the
 * right proof: 409 `oauth_pending`.
 */
export function createOAuthStep(deps: {
  issuer: string;
  providers: OAuthProviderRegistry;
}): AuthFlowStep<{ proof?: string | undefined }> {
  const providerOf = (context: StepContext) => {
    const id = stepSettingsOf(context, 'oauth').provider;
    const provider = typeof id === 'string' ? deps.providers.get(id) : undefined;
    // The funnel was checked when set (checkSettings); a provider removed from the configuration since.
    if (!provider) throw new ApiError(400, 'flow_not_available', 'This sign-in provider is not available.');
    return provider;
  };
  const tokenOf = (context: StepContext) => {
    const token = context.session.tempData.oauthStepToken;
    if (typeof token !== 'string')
      throw new ApiError(409, 'oauth_pending', 'Sign in with the provider first.');
    return token;
  };
  return {
    id: oauthStepId,
    flows: ['login'],
    authenticates: true,
    // What the provider said reached the server through its callback; the client brings only the
    // proof that callback gave its browser (`oauth_proof` on the return address).
    input: z.strictObject({ proof: z.string().max(100).optional() }),
    checkSettings(settings) {
      const id = settings?.provider;
      if (typeof id !== 'string') return 'the oauth step needs settings.provider, a provider id';
      if (!deps.providers.get(id)) return `no oauth_provider ${id} is configured`;
      return undefined;
    },
    async prepare(context) {
      // The provider is kept with the token: the callback takes the token for this provider only.
      const provider = stepSettingsOf(context, oauthStepId).provider;
      return {
        tempData: {
          oauthStepToken: randomSecret(32),
          ...(typeof provider === 'string' ? { oauthStepProvider: provider } : {}),
        },
      };
    },
    async run(context, { proof }) {
      const provider = providerOf(context);
      const userId = proof
        ? await takeStepResult(context.db, tokenOf(context), provider.id, proof, context.clock.now())
        : undefined;
      if (!userId) {
        throw new ApiError(409, 'oauth_pending', `Sign in with ${provider.name} first.`, {
          provider: provider.id,
        });
      }
      // A funnel that identified the person before (e.g. phone-email first) must meet the same account.
      if (context.session.userId && context.session.userId !== userId) {
        throw new ApiError(
          401,
          'oauth_account_mismatch',
          `This ${provider.name} account is not linked to the account signing in.`,
        );
      }
      return { userId, authMethod: federatedAmr };
    },
    screen(context) {
      const provider = providerOf(context);
      return {
        title: `Sign in with ${provider.name}`,
        fields: [],
        data: {
          oauth: {
            provider: provider.id,
            name: provider.name,
            startUrl: `${deps.issuer}${oauthStepStartPath(provider.id, tokenOf(context))}`,
          },
        },
      };
    },
  };
}
