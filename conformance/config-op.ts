import * as jose from 'jose';
import { check, type ConformanceModule } from './context.js';

/** The OIDF Config OP plan's modules that apply (discovery, the key set, RS256 ID tokens). */
export const configOpModules: ConformanceModule[] = [
  {
    id: 'oidcc-discovery-endpoint-verification',
    plan: 'Config OP',
    async run(context) {
      const metadata = context.metadata;
      check(
        metadata.issuer === context.deployment.issuer.href.replace(/\/$/, ''),
        `issuer ${metadata.issuer}`,
      );
      for (const field of [
        'authorization_endpoint',
        'token_endpoint',
        'jwks_uri',
        'response_types_supported',
        'subject_types_supported',
        'id_token_signing_alg_values_supported',
      ] as const) {
        check(metadata[field] !== undefined, `no ${field} in the discovery document`);
      }
      check(metadata.response_types_supported!.includes('code'), 'response type code not supported');
      check(metadata.id_token_signing_alg_values_supported!.includes('RS256'), 'RS256 not supported');
      for (const endpoint of [
        'authorization_endpoint',
        'token_endpoint',
        'userinfo_endpoint',
        'jwks_uri',
      ] as const) {
        const value = metadata[endpoint];
        if (value)
          check(
            new URL(value).origin === new URL(metadata.issuer).origin || value.startsWith('https://'),
            endpoint,
          );
      }
    },
  },
  {
    id: 'oidcc-idtoken-rs256',
    plan: 'Config OP',
    async run(context) {
      const tokens = await context.redeem(await context.authorize());
      const header = jose.decodeProtectedHeader(tokens.id_token!);
      check(header.alg === 'RS256', `the ID token is signed with ${header.alg}`);
    },
  },
  {
    id: 'oidcc-idtoken-signature',
    plan: 'Config OP',
    async run(context) {
      const tokens = await context.redeem(await context.authorize());
      const keys = jose.createRemoteJWKSet(new URL(context.metadata.jwks_uri!));
      const { payload } = await jose.jwtVerify(tokens.id_token!, keys, {
        issuer: context.metadata.issuer,
        audience: context.deployment.clientId,
      });
      check(payload.sub, 'no sub');
    },
  },
  {
    id: 'oidcc-ensure-jwks-has-no-private-keys',
    plan: 'Config OP',
    async run(context) {
      const response = await fetch(context.metadata.jwks_uri!);
      const { keys } = (await response.json()) as { keys: Record<string, unknown>[] };
      check(keys.length > 0, 'an empty key set');
      for (const key of keys) {
        check(
          !('d' in key || 'p' in key || 'q' in key),
          `the key ${String(key.kid)} is published with its private part`,
        );
        check(typeof key.kid === 'string', 'a key without kid');
      }
    },
  },
];
