import crypto from 'node:crypto';

/**
 * Encrypts secrets the service must be able to read back (a TOTP seed), AES-256-GCM. The keys are
 * derived with HKDF from the configured COOKIE_KEYS under a label of their own, so they are
 * independent of the cookie signatures: the first key encrypts, every key decrypts (the same rotation
 * rule as the cookie keys).
 */
export class SecretBox {
  readonly #keys: Buffer[];

  constructor(rootSecrets: readonly string[]) {
    if (rootSecrets.length === 0) throw new Error('SecretBox needs at least one root secret');
    this.#keys = rootSecrets.map((secret) =>
      Buffer.from(crypto.hkdfSync('sha256', secret, 'identity-secret-box', 'auth-method-secrets/v1', 32)),
    );
  }

  /** `v1.<iv>.<ciphertext>.<tag>`, base64url parts. */
  seal(plaintext: string): string {
    const iv = crypto.randomBytes(12);
    const cipher = crypto.createCipheriv('aes-256-gcm', this.#keys[0]!, iv);
    const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    const parts = [iv, ciphertext, cipher.getAuthTag()].map((part) => part.toString('base64url'));
    return `v1.${parts.join('.')}`;
  }

  open(sealed: string): string {
    const [version, iv, ciphertext, tag] = sealed.split('.');
    if (version !== 'v1' || !iv || ciphertext === undefined || !tag) throw new Error('not a sealed secret');
    for (const key of this.#keys) {
      try {
        const decipher = crypto.createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
        decipher.setAuthTag(Buffer.from(tag, 'base64url'));
        return Buffer.concat([
          decipher.update(Buffer.from(ciphertext, 'base64url')),
          decipher.final(),
        ]).toString('utf8');
      } catch {
        // Sealed under another key: try the next one.
      }
    }
    throw new Error('the secret was sealed with a key that is no longer configured');
  }
}
