import { generateRsaPrivateKeyPem } from '../../keys/development-secrets.js';
import { signingKeyFromPem } from '../../keys/signing-keys.js';
import type { CliCommand } from '../command.js';

export const keysGenerateCommand: CliCommand = {
  name: 'keys:generate',
  usage: 'keys:generate',
  summary: 'Print a new RSA-2048 private key (PEM) for OIDC_PRIVATE_KEY or MAIN_AUTH_PRIVATE_KEY',
  options: {},
  needsDatabase: false,
  async run() {
    const pem = generateRsaPrivateKeyPem();
    const { kid } = await signingKeyFromPem(pem, 'oidc');
    return { kid, alg: 'RS256', private_key_pem: pem };
  },
};
