import { dictionary } from '@zxcvbn-ts/language-common';

/**
 * The bundled list of common passwords: `passwords-common` of @zxcvbn-ts/language-common (MIT, the
 * maintained TypeScript port of Dropbox's zxcvbn), about 49,000 passwords ranked by frequency in breach
 * corpora (ASVS 6.2.4 asks for at least the top 3,000). Lower-case, like the list; loaded on first use.
 */
let commonPasswords: Set<string> | undefined;

export function isCommonPassword(password: string): boolean {
  commonPasswords ??= new Set(dictionary['passwords-common']);
  return commonPasswords.has(password.toLowerCase());
}
