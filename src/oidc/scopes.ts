/**
 * The scopes of the spec and the claims each one releases (Scopes and claims table). Service scopes
 * (`service:<catalogue permission>`) are not OIDC scopes: they live on confidential service clients and
 * only ever reach client-credentials tokens.
 */
export const oidcScopes = ['openid', 'email', 'profile', 'phone', 'organizations', 'roles'] as const;
export type OidcScope = (typeof oidcScopes)[number];

export const claimsByScope = {
  openid: ['sub'],
  profile: ['name', 'given_name', 'family_name', 'preferred_username', 'picture'],
  email: ['email', 'email_verified'],
  phone: ['phone_number', 'phone_number_verified'],
  organizations: ['organization_memberships'],
  roles: ['global_roles', 'permissions'],
} as const satisfies Record<OidcScope, readonly string[]>;

/** What the consent screen says a scope gives access to. */
export const scopeDescriptions: Record<OidcScope, string> = {
  openid: 'Your account identifier',
  profile: 'Your name and photo',
  email: 'Your email address',
  phone: 'Your phone number',
  organizations: 'Your organization memberships',
  roles: 'Your roles and rights',
};

export const servicePrefix = 'service:';
/** `service:<catalogue permission>`: lower-case dotted segments, as the permission catalogue's keys. */
export const serviceScopePattern = /^service:[a-z][a-z0-9_-]*(\.[a-z0-9_-]+)+$/;

export function isOidcScope(scope: string): scope is OidcScope {
  return (oidcScopes as readonly string[]).includes(scope);
}

export function isServiceScope(scope: string): boolean {
  return scope.startsWith(servicePrefix);
}

export function splitScope(scope: string | undefined | null): string[] {
  return scope ? [...new Set(scope.split(' ').filter(Boolean))] : [];
}
