import type { OAuthProviderConfig } from './oauth-provider-config.js';

type Preset = Omit<OAuthProviderConfig, 'id' | 'clientId' | 'clientSecret' | 'preset'>;

/**
 * The providers this ecosystem's users have. Google is OpenID Connect (discovery, id_token against its
 * JWKS); Yandex ID, VK ID and GitHub are plain OAuth 2.0 whose profile is read from their user-info
 * endpoints. A configuration naming a preset may still override any field.
 */
export const providerPresets: Record<NonNullable<OAuthProviderConfig['preset']>, Preset> = {
  google: {
    name: 'Google',
    kind: 'oidc',
    issuer: 'https://accounts.google.com',
    scopes: ['openid', 'email', 'profile'],
  },
  yandex: {
    name: 'Yandex ID',
    kind: 'oauth2',
    authorizationEndpoint: 'https://oauth.yandex.ru/authorize',
    tokenEndpoint: 'https://oauth.yandex.ru/token',
    userinfo: { url: 'https://login.yandex.ru/info?format=json', auth: 'oauth' },
    scopes: ['login:email', 'login:info', 'login:default_phone'],
    // Yandex hands out the account's confirmed addresses only.
    claims: {
      subject: 'id',
      email: 'default_email',
      emailVerified: true,
      phone: 'default_phone.number',
      phoneVerified: true,
      givenName: 'first_name',
      familyName: 'last_name',
    },
  },
  vk: {
    name: 'VK ID',
    kind: 'oauth2',
    authorizationEndpoint: 'https://id.vk.com/authorize',
    tokenEndpoint: 'https://id.vk.com/oauth2/auth',
    userinfo: { url: 'https://id.vk.com/oauth2/user_info', auth: 'form' },
    scopes: ['email', 'phone'],
    // VK ID does not say whether the email was confirmed: a match asks the person to confirm the link.
    claims: {
      subject: 'user.user_id',
      email: 'user.email',
      emailVerified: false,
      phone: 'user.phone',
      phoneVerified: false,
      givenName: 'user.first_name',
      familyName: 'user.last_name',
    },
  },
  github: {
    name: 'GitHub',
    kind: 'oauth2',
    authorizationEndpoint: 'https://github.com/login/oauth/authorize',
    tokenEndpoint: 'https://github.com/login/oauth/access_token',
    userinfo: {
      url: 'https://api.github.com/user',
      auth: 'bearer',
      emailsUrl: 'https://api.github.com/user/emails',
    },
    scopes: ['read:user', 'user:email'],
    claims: { subject: 'id', email: 'email', emailVerified: 'email_verified', givenName: 'name' },
  },
};
