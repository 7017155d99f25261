/** Where the service's errors are our JSON API's `{ error, message }`: these path prefixes. */
export const jsonApiPrefixes = ['/api/', '/oauth/clients/', '/oauth/consents/', '/oauth/sso/'] as const;

export function isJsonApiPath(path: string): boolean {
  return jsonApiPrefixes.some((prefix) => path.startsWith(prefix));
}
