/**
 * The member of each key in /.well-known/jwks.json that names the key's purpose (`oidc`: id tokens and
 * OAuth access tokens; `main-auth`: the service's own sign-in tokens). A verifier outside the service
 * (the resource-server kit) then trusts a key only for the tokens of its purpose, as the service's own
 * verifiers do: the typ header alone says what a token claims to be, not which key may vouch for it.
 * RFC 7517 §4 lets a JWK carry members of its own, to be ignored by whoever doesn't know them, named
 * collision-resistant (a URN of ours, as our extension grant type is).
 */
export const keyPurposeMember = 'urn:identity-service:key-purpose';
