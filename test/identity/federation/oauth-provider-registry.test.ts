import { describe, expect, it } from 'vitest';
import {
  OAuthProviderConfigError,
  OAuthProviderRegistry,
  resolveOAuthProvider,
} from '../../../src/identity/federation/oauth-provider-registry.js';
import { ConfigError, loadConfig } from '../../../src/config.js';
import { mapUpstreamClaims } from '../../../src/identity/federation/upstream-identity.js';

describe('oauth_provider configuration', () => {
  it('fills a preset in: Google is OpenID Connect through discovery', () => {
    const google = resolveOAuthProvider({
      id: 'google',
      preset: 'google',
      clientId: 'abc',
      clientSecret: 's',
    });
    expect(google).toMatchObject({
      name: 'Google',
      kind: 'oidc',
      issuer: 'https://accounts.google.com',
      scopes: ['openid', 'email', 'profile'],
    });
  });

  it('GitHub, Yandex ID and VK ID are plain OAuth 2.0 with their user-info endpoints', () => {
    for (const preset of ['github', 'yandex', 'vk'] as const) {
      const provider = resolveOAuthProvider({ id: preset, preset, clientId: 'abc' });
      expect(provider.kind).toBe('oauth2');
      expect(provider.tokenEndpoint).toMatch(/^https:\/\//);
      expect(provider.userinfo?.url).toMatch(/^https:\/\//);
      expect(provider.scopes).not.toContain('openid');
    }
  });

  it('a configuration may override what a preset says', () => {
    const provider = resolveOAuthProvider({
      id: 'corp-google',
      preset: 'google',
      name: 'Corporate Google',
      clientId: 'abc',
      authorizationParameters: { hd: 'example.com' },
    });
    expect(provider.name).toBe('Corporate Google');
    expect(provider.authorizationParameters).toEqual({ hd: 'example.com' });
  });

  it('a generic OpenID Connect provider always asks for openid', () => {
    const provider = resolveOAuthProvider({
      id: 'corp',
      issuer: 'https://id.example.com',
      clientId: 'x',
      scopes: ['email'],
    });
    expect(provider.scopes).toEqual(['openid', 'email']);
  });

  it('refuses what cannot work, naming the provider and the field', () => {
    expect(() => resolveOAuthProvider({ id: 'corp', clientId: 'x' })).toThrow(/corp: .*issuer/);
    expect(() => resolveOAuthProvider({ id: 'plain', kind: 'oauth2', clientId: 'x' })).toThrow(
      /plain: .*authorizationEndpoint/,
    );
    expect(() => resolveOAuthProvider({ id: 'Bad Id', preset: 'google', clientId: 'x' })).toThrow(
      OAuthProviderConfigError,
    );
    expect(() =>
      new OAuthProviderRegistry()
        .register({ id: 'g', preset: 'google', clientId: 'x' })
        .register({ id: 'g', preset: 'google', clientId: 'y' }),
    ).toThrow(/registered twice/);
  });
});

describe('claim mapping', () => {
  it('reads Yandex ID’s profile: confirmed email and phone, numeric id as the subject', () => {
    const yandex = resolveOAuthProvider({ id: 'yandex', preset: 'yandex', clientId: 'x' });
    const identity = mapUpstreamClaims(
      {
        id: 1234567,
        default_email: 'Person@Yandex.ru',
        default_phone: { id: 1, number: '+7 912 345-67-89' },
        first_name: 'Иван',
        last_name: 'Петров',
      },
      yandex.claims,
    );
    expect(identity).toEqual({
      subject: '1234567',
      email: 'person@yandex.ru',
      emailVerified: true,
      phone: '+79123456789',
      phoneVerified: true,
      givenName: 'Иван',
      familyName: 'Петров',
    });
  });

  it('VK ID gives no verification flag: its email is not taken as verified; a phone without + is international', () => {
    const vk = resolveOAuthProvider({ id: 'vk', preset: 'vk', clientId: 'x' });
    const identity = mapUpstreamClaims(
      { user: { user_id: '42', email: 'a@vk.com', phone: '79123456789' } },
      vk.claims,
    );
    expect(identity).toMatchObject({
      subject: '42',
      emailVerified: false,
      phone: '+79123456789',
      phoneVerified: false,
    });
  });

  it('OpenID Connect standard claims; a malformed email is dropped; no subject, no identity', () => {
    const corp = resolveOAuthProvider({ id: 'corp', issuer: 'https://id.example.com', clientId: 'x' });
    expect(
      mapUpstreamClaims({ sub: 's', email: 'not-an-email', email_verified: true }, corp.claims),
    ).toMatchObject({
      subject: 's',
      email: undefined,
      emailVerified: false,
    });
    expect(mapUpstreamClaims({ email: 'a@b.example' }, corp.claims)).toBeUndefined();
  });
});

describe('FEDERATION_PROVIDERS', () => {
  it('reads a JSON array of provider configurations', () => {
    const config = loadConfig({
      FEDERATION_PROVIDERS: JSON.stringify([
        { id: 'google', preset: 'google', clientId: 'abc', clientSecret: 's' },
      ]),
    });
    expect(config.oauthProviders).toEqual([
      { id: 'google', preset: 'google', clientId: 'abc', clientSecret: 's' },
    ]);
    expect(loadConfig({}).oauthProviders).toEqual([]);
  });

  it('a bad value stops the start naming the variable, never printing its secrets', () => {
    for (const value of [
      'not json',
      JSON.stringify([{ id: 'google', preset: 'google', clientSecret: 'hush' }]),
    ]) {
      let error: unknown;
      try {
        loadConfig({ FEDERATION_PROVIDERS: value });
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as Error).message).toMatch(/^Invalid configuration: FEDERATION_PROVIDERS /);
      expect((error as Error).message).not.toContain('hush');
    }
  });
});
