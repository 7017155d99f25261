import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { generateRsaPrivateKeyPem } from '../../src/keys/development-secrets.js';

// ISSUER=http://id.example.com in production (a typo, or TLS ended in front and the issuer copied from
// the backend's address) started fine: passwords and tokens crossed the network in clear, cookies
// went without Secure and no HSTS was sent.
const production = (issuer: string) => ({
  NODE_ENV: 'production',
  ISSUER: issuer,
  OIDC_PRIVATE_KEY: generateRsaPrivateKeyPem(),
  MAIN_AUTH_PRIVATE_KEY: generateRsaPrivateKeyPem(),
  COOKIE_KEYS: 'a-cookie-key-of-at-least-32-characters!!',
  SMTP_URL: 'smtp://mail.example.com:587',
});

describe('the issuer in production', () => {
  it('refuses plain http', () => {
    for (const issuer of ['http://id.example.com', 'http://10.0.0.5:3000/idp']) {
      expect(() => loadConfig(production(issuer)), issuer).toThrow(/ISSUER.*https/);
    }
  });

  it('takes https, and http on loopback', () => {
    for (const issuer of ['https://id.example.com', 'http://127.0.0.1:3000', 'http://localhost:3000']) {
      expect(loadConfig(production(issuer)).issuer, issuer).toBe(issuer);
    }
  });
});
