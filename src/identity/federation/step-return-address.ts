/**
 * The address the browser returns to after a funnel's `oauth` step went through the provider:
 * `returnTo` (a path of this service, returnToSchema) with the step's proof added to its **query**.
 *
 * Not to its end: a return address with a fragment (`/oauth/authorize?client_id=...#`) then carried
 * the proof in the fragment, which a browser keeps across every redirect that has none of its own. A
 * path of this service that redirects elsewhere (authorize to any registered client's redirect URI)
 * handed it to that site, and whoever held the flow (an API flow, which anyone can start) submitted the
 * step with it: signed in as the person who opened their start link. In the query, the proof reaches
 * only this service; the fragment, if any, follows it unchanged.
 *
 * Plain string work, no URL parsing: serializing a parsed URL removes dot segments, and `/.//host`
 * would come out as `//host`, another site.
 */
export function returnAddressWithProof(returnTo: string, proof: string): string {
  const hashAt = returnTo.indexOf('#');
  const beforeHash = hashAt === -1 ? returnTo : returnTo.slice(0, hashAt);
  const hash = hashAt === -1 ? '' : returnTo.slice(hashAt);
  const separator = beforeHash.includes('?') ? '&' : '?';
  return `${beforeHash}${separator}${new URLSearchParams({ oauth_proof: proof })}${hash}`;
}
