/**
 * How many ids one statement carries at most when it names rows by a list (`where ... in (...)`, a
 * multi-row insert). PostgreSQL's protocol binds at most 65,535 values to a statement (PGlite's too),
 * and some lists grow at a user's will: a grant per authorization, each kept 30 days, so an account
 * signed in to an application some 33,000 times (a thief with a copied browser session, asking
 * silently with prompt=none) had more grants than an insert of two values per row could bind. Every
 * revocation naming them all failed: a password change or reset, "sign out everywhere", an
 * administrator's disable or revoke-sessions. Lists are sent this many at a time instead.
 */
export const idsPerStatement = 1000;

/** `items` in consecutive slices of at most `size`, in their order (none for an empty list). */
export function chunksOf<T>(items: readonly T[], size = idsPerStatement): T[][] {
  const chunks: T[][] = [];
  for (let start = 0; start < items.length; start += size) chunks.push(items.slice(start, start + size));
  return chunks;
}
