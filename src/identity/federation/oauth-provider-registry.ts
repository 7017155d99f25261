import {
  claimMappingSchema,
  oauthProviderConfigSchema,
  type OAuthProvider,
  type OAuthProviderConfig,
} from './oauth-provider-config.js';
import { providerPresets } from './provider-presets.js';

/** A provider configuration that can't work; the message names the provider and the field. */
export class OAuthProviderConfigError extends Error {
  constructor(id: string, detail: string) {
    super(`oauth_provider ${id}: ${detail}`);
    this.name = 'OAuthProviderConfigError';
  }
}

/** Fills a configuration in from its preset and the defaults; refuses one that can't work. */
export function resolveOAuthProvider(input: OAuthProviderConfig): OAuthProvider {
  const parsed = oauthProviderConfigSchema.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new OAuthProviderConfigError(String(input.id), `${issue.path.join('.')} ${issue.message}`);
  }
  const config = parsed.data;
  const preset = config.preset ? providerPresets[config.preset] : {};
  const kind = config.kind ?? preset.kind ?? 'oidc';
  const provider: OAuthProvider = {
    id: config.id,
    name: config.name ?? preset.name ?? config.id,
    kind,
    issuer: config.issuer ?? preset.issuer,
    authorizationEndpoint: config.authorizationEndpoint ?? preset.authorizationEndpoint,
    tokenEndpoint: config.tokenEndpoint ?? preset.tokenEndpoint,
    userinfo: config.userinfo ?? (preset.userinfo as OAuthProvider['userinfo']),
    clientId: config.clientId,
    clientSecret: config.clientSecret,
    scopes: config.scopes ?? preset.scopes ?? (kind === 'oidc' ? ['openid', 'email', 'profile'] : []),
    claims: claimMappingSchema.parse({ ...preset.claims, ...config.claims }),
    authorizationParameters: { ...preset.authorizationParameters, ...config.authorizationParameters },
  };
  if (kind === 'oidc') {
    if (!provider.issuer)
      throw new OAuthProviderConfigError(provider.id, 'an OpenID Connect provider needs issuer');
    if (!provider.scopes.includes('openid')) provider.scopes = ['openid', ...provider.scopes];
  } else {
    for (const field of ['authorizationEndpoint', 'tokenEndpoint', 'userinfo'] as const) {
      if (!provider[field]) {
        throw new OAuthProviderConfigError(provider.id, `a plain OAuth 2.0 provider needs ${field}`);
      }
    }
  }
  return provider;
}

/**
 * The third-party identity providers (plugin kind oauth_provider), by id. A provider is configuration:
 * register one from the service options (`oauthProviders`) or the FEDERATION_PROVIDERS variable.
 */
export class OAuthProviderRegistry {
  readonly #providers = new Map<string, OAuthProvider>();

  register(config: OAuthProviderConfig): this {
    const provider = resolveOAuthProvider(config);
    if (this.#providers.has(provider.id)) {
      throw new OAuthProviderConfigError(provider.id, 'is registered twice');
    }
    this.#providers.set(provider.id, provider);
    return this;
  }

  get(id: string): OAuthProvider | undefined {
    return this.#providers.get(id);
  }

  all(): OAuthProvider[] {
    return [...this.#providers.values()];
  }
}
