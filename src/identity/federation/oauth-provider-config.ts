import { z } from 'zod';

/**
 * Where a provider's user info keeps each fact (dot paths into the id_token claims merged with the
 * userinfo answer). `emailVerified` / `phoneVerified` may be a path or a constant: some providers only
 * hand out addresses they have confirmed, others never say.
 */
export const claimMappingSchema = z.object({
  subject: z.string().min(1).default('sub'),
  email: z.string().min(1).default('email'),
  emailVerified: z.union([z.string().min(1), z.boolean()]).default('email_verified'),
  phone: z.string().min(1).default('phone_number'),
  phoneVerified: z.union([z.string().min(1), z.boolean()]).default('phone_number_verified'),
  givenName: z.string().min(1).default('given_name'),
  familyName: z.string().min(1).default('family_name'),
});
export type ClaimMapping = z.infer<typeof claimMappingSchema>;

const providerId = z
  .string()
  .regex(/^[a-z0-9][a-z0-9_-]{0,62}$/, 'must be lowercase letters, digits, - or _ (at most 63)');

const endpoint = z.url({ protocol: /^https?$/ });

/** How the profile is read when the provider is plain OAuth 2.0 (no id_token). */
const userinfoRequestSchema = z.object({
  url: endpoint,
  /** bearer: Authorization: Bearer; oauth: Authorization: OAuth (Yandex); form: POST access_token + client_id (VK ID). */
  auth: z.enum(['bearer', 'oauth', 'form']).default('bearer'),
  /** GitHub: the verified primary email comes from a second endpoint (needs scope user:email). */
  emailsUrl: endpoint.optional(),
});

/**
 * One third-party identity provider (plugin kind oauth_provider), as configured: either a preset
 * (`preset: "google"`, then only the client credentials) or everything spelled out. OpenID Connect
 * providers are found through discovery from `issuer`; plain OAuth 2.0 providers name their endpoints.
 */
export const oauthProviderConfigSchema = z.object({
  id: providerId,
  preset: z.enum(['google', 'yandex', 'vk', 'github']).optional(),
  /** The button's label: "Sign in with <name>". */
  name: z.string().min(1).max(100).optional(),
  kind: z.enum(['oidc', 'oauth2']).optional(),
  /** OpenID Connect: the issuer; discovery reads <issuer>/.well-known/openid-configuration. */
  issuer: endpoint.optional(),
  authorizationEndpoint: endpoint.optional(),
  tokenEndpoint: endpoint.optional(),
  userinfo: userinfoRequestSchema.optional(),
  clientId: z.string().min(1).max(500),
  clientSecret: z.string().min(1).max(2000).optional(),
  scopes: z.array(z.string().min(1).max(200)).max(30).optional(),
  claims: claimMappingSchema.partial().optional(),
  /** Extra query parameters of the authorization request (e.g. Google's prompt=select_account). */
  authorizationParameters: z.record(z.string(), z.string()).optional(),
});
export type OAuthProviderConfig = z.input<typeof oauthProviderConfigSchema>;

/** A provider with every default filled in: what the sign-in code works with. */
export interface OAuthProvider {
  id: string;
  name: string;
  kind: 'oidc' | 'oauth2';
  issuer: string | undefined;
  authorizationEndpoint: string | undefined;
  tokenEndpoint: string | undefined;
  userinfo: z.infer<typeof userinfoRequestSchema> | undefined;
  clientId: string;
  clientSecret: string | undefined;
  scopes: string[];
  claims: ClaimMapping;
  authorizationParameters: Record<string, string>;
}

/** FEDERATION_PROVIDERS: a JSON array of provider configurations. */
export const oauthProviderListSchema = z.array(oauthProviderConfigSchema).max(50);
