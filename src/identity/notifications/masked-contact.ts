import type { Identifier } from '../users/contact.js';

/**
 * An email or phone shown to someone who may not own it (the previous contact of an account learns that
 * it was replaced, not the whole new address): `a•••@example.com`, `+•••••••••23`.
 */
export function maskedContact(contact: Identifier): string {
  if (contact.kind === 'email') {
    const at = contact.value.lastIndexOf('@');
    return `${contact.value.slice(0, 1)}•••${contact.value.slice(at)}`;
  }
  return `+${'•'.repeat(Math.max(0, contact.value.length - 3))}${contact.value.slice(-2)}`;
}
