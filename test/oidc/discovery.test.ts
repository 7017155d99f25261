import http from 'node:http';
import { createLocalJWKSet, jwtVerify, SignJWT, type JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../support/test-service.js';
import { keyPurposeMember } from '../../src/keys/published-key-purpose.js';

let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service?.close());

/** GET of `path` with a Host header of the caller's choosing (fetch can't set Host). */
function getWithHost(path: string, host: string): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const request = http.get(service.url(path), { headers: { host } }, (response) => {
      let text = '';
      response.on('data', (chunk: Buffer) => (text += chunk.toString()));
      response.on('end', () => resolve(JSON.parse(text) as Record<string, unknown>));
    });
    request.on('error', reject);
  });
}

describe('discovery and keys', () => {
  // First in this file: the service's first discovery request is the one whose answer is kept.
  it('names the issuer’s endpoints, whatever Host the first request after a start sends', async () => {
    const forged = await getWithHost('/.well-known/openid-configuration', 'attacker.example');
    const everyone = (await (await fetch(service.url('/.well-known/openid-configuration'))).json()) as Record<
      string,
      unknown
    >;
    for (const document of [forged, everyone]) {
      expect(document.token_endpoint).toBe(`${service.issuer}/oauth/token`);
      expect(document.jwks_uri).toBe(`${service.issuer}/.well-known/jwks.json`);
      expect(JSON.stringify(document)).not.toContain('attacker.example');
    }
    const oauth = await getWithHost('/.well-known/oauth-authorization-server', 'attacker.example');
    expect(oauth.authorization_endpoint).toBe(`${service.issuer}/oauth/authorize`);
  });

  it('publishes every field of the spec with absolute addresses built from the issuer', async () => {
    const response = await fetch(service.url('/.well-known/openid-configuration'));
    expect(response.status).toBe(200);
    const document = (await response.json()) as Record<string, unknown>;
    const at = (path: string) => `${service.issuer}${path}`;
    expect(document).toMatchObject({
      issuer: service.issuer,
      authorization_endpoint: at('/oauth/authorize'),
      token_endpoint: at('/oauth/token'),
      userinfo_endpoint: at('/oauth/userinfo'),
      jwks_uri: at('/.well-known/jwks.json'),
      end_session_endpoint: at('/oauth/end_session'),
      introspection_endpoint: at('/oauth/introspect'),
      revocation_endpoint: at('/oauth/revoke'),
      registration_endpoint: at('/oauth/clients/register'),
      response_types_supported: ['code'],
      subject_types_supported: ['public'],
      id_token_signing_alg_values_supported: ['RS256'],
      code_challenge_methods_supported: ['S256'],
    });
    expect([...(document.scopes_supported as string[])].sort()).toEqual(
      ['openid', 'email', 'profile', 'phone', 'organizations', 'roles'].sort(),
    );
    expect([...(document.grant_types_supported as string[])].sort()).toEqual(
      ['authorization_code', 'refresh_token', 'client_credentials'].sort(),
    );
    expect([...(document.token_endpoint_auth_methods_supported as string[])].sort()).toEqual(
      ['none', 'client_secret_post', 'client_secret_basic'].sort(),
    );
  });

  it('says how introspection and revocation authenticate clients (RFC 8414 §2)', async () => {
    const document = (await (await fetch(service.url('/.well-known/openid-configuration'))).json()) as Record<
      string,
      unknown
    >;
    expect(document.introspection_endpoint_auth_methods_supported).toEqual(['client_secret_basic']);
    expect([...(document.revocation_endpoint_auth_methods_supported as string[])].sort()).toEqual(
      ['none', 'client_secret_post', 'client_secret_basic'].sort(),
    );
  });

  it('RFC 8414’s document for OAuth clients is the same, without the hidden inbound-SSO grant', async () => {
    const read = async (path: string) =>
      (await (await fetch(service.url(path))).json()) as Record<string, unknown>;
    const openid = await read('/.well-known/openid-configuration');
    const oauth = await read('/.well-known/oauth-authorization-server');
    expect(oauth.grant_types_supported).toEqual(openid.grant_types_supported);
    expect(oauth.introspection_endpoint_auth_methods_supported).toEqual(['client_secret_basic']);
    expect(oauth.token_endpoint).toBe(openid.token_endpoint);
  });

  it('publishes the OAuth and the main-auth public keys with kids, and no private parts', async () => {
    const response = await fetch(service.url('/.well-known/jwks.json'));
    expect(response.status).toBe(200);
    const { keys } = (await response.json()) as { keys: Record<string, unknown>[] };
    const { oidc, mainAuth } = service.service.keys;
    expect(keys.map((key) => key.kid).sort()).toEqual([oidc.kid, mainAuth.kid].sort());
    // Each key says what it signs, so a verifier elsewhere trusts it for those tokens only.
    const purposeOf = (kid: string) => keys.find((key) => key.kid === kid)?.[keyPurposeMember];
    expect([purposeOf(oidc.kid), purposeOf(mainAuth.kid)]).toEqual(['oidc', 'main-auth']);
    for (const key of keys) {
      expect(key).toMatchObject({ kty: 'RSA', alg: 'RS256', use: 'sig' });
      for (const privatePart of ['d', 'p', 'q', 'dp', 'dq', 'qi'])
        expect(key).not.toHaveProperty(privatePart);
    }
  });

  it('lets a third party verify an id_token-like JWT signed by the provider with the published key set', async () => {
    const jwks = (await (await fetch(service.url('/.well-known/jwks.json'))).json()) as {
      keys: JWK[];
    };
    const signed = await new SignJWT({ probe: true })
      .setProtectedHeader({ alg: 'RS256', kid: service.service.keys.oidc.kid })
      .setIssuer(service.issuer)
      .sign(service.service.keys.oidc.privateKey);
    const { payload } = await jwtVerify(signed, createLocalJWKSet(jwks), { issuer: service.issuer });
    expect(payload.probe).toBe(true);
  });
});
