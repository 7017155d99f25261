/**
 * The address of the sign-in page, /:lang/auth, with what it carries: the OIDC interaction it serves,
 * `register=1` for registration, `return_to` after a direct sign-in, a saved `account` chosen.
 */
export function authPagePath(lang: string, query: Record<string, string | undefined> = {}): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) if (value !== undefined) params.set(name, value);
  const search = params.toString();
  return search ? `/${lang}/auth?${search}` : `/${lang}/auth`;
}
