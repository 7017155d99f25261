import crypto from 'node:crypto';
import os from 'node:os';
import argon2 from 'argon2';
import { defaults, type ServiceSettings } from '../../defaults.js';
import { currentKoaContext } from '../../http/request-context.js';
import { requestInfo } from '../../http/request-info.js';
import { startWait } from '../../http/waiting-requests.js';
import { TurnsPerAddress } from './turns-per-address.js';

/**
 * argon2id parameters of new hashes (src/defaults.ts: OWASP's m=19456 KiB, t=2, p=1). argon2 runs on
 * libuv's thread pool, so hashing never blocks the event loop.
 */
export type PasswordHashing = ServiceSettings['passwordHashing'];

/**
 * How many argon2id computations run at once: one per core, and always one thread of libuv's pool
 * (UV_THREADPOOL_SIZE, 4 by default) left free; the others wait their turn. More at once would not
 * finish sooner (each keeps a core busy for its whole ~25 ms) and would each hold another 19 MiB; and
 * with every pool thread hashing, the token endpoint's RSA signatures and file reads would wait behind
 * password checks during a burst of logins. A machine with more cores than that raises
 * UV_THREADPOOL_SIZE to use them.
 */
export function argon2Concurrency(
  cores = os.availableParallelism(),
  threadPoolSize = Number(process.env.UV_THREADPOOL_SIZE) || 4,
): number {
  return Math.max(1, Math.min(cores, threadPoolSize - 1));
}

const argon2Turns = new TurnsPerAddress(argon2Concurrency());

/** The requests that have had an argon2 computation run (argon2Slots). */
const computedFor = new WeakSet<object>();

/**
 * Runs an argon2 computation in its turn: the slots are shared between client addresses (an IPv6
 * client's /64) in turns, so one address's burst of password checks doesn't queue everyone else's
 * sign-in behind it (turns-per-address.ts). Work outside a request (the decoy at start) has a line of
 * its own.
 */
function argon2Slots<T>(work: () => Promise<T>): Promise<T> {
  const ctx = currentKoaContext();
  // While in line, the request may give its place to a newcomer at the bound (waiting-requests.ts),
  // but only before its first computation: after one has run it has checked something (the first of
  // a password's two verifications), and ending it would answer a wrong guess with an uncounted 503.
  const wait = ctx && !computedFor.has(ctx) ? startWait() : undefined;
  return argon2Turns.run(
    ctx ? requestInfo(ctx).addressBlock : '',
    () => {
      if (ctx) computedFor.add(ctx);
      return work();
    },
    wait,
  );
}

/**
 * Passwords are hashed and checked in Unicode normalization form NFKC (OWASP ASVS 5 6.2.x, NIST SP
 * 800-63B 5.1.1.2): the same password typed on another system (é as one code point or as e + a
 * combining accent, a full-width digit) is the same password.
 */
export function normalizePassword(password: string): string {
  return password.normalize('NFKC');
}

export function hashPassword(
  password: string,
  hashing: PasswordHashing = defaults.passwordHashing,
): Promise<string> {
  const normalized = normalizePassword(password);
  return argon2Slots(() => argon2.hash(normalized, { type: argon2.argon2id, ...hashing }));
}

/**
 * `match`; `match_unnormalized`: the hash is of the password as typed, not normalized (made before
 * passwords were normalized; worth hashing again); `mismatch`.
 */
export type PasswordCheck = 'match' | 'match_unnormalized' | 'mismatch';

/** One decoy per set of parameters (a process may run services with different ones, as tests do). */
const decoyHashes = new Map<string, Promise<string>>();

function decoyHash(hashing: PasswordHashing): Promise<string> {
  const key = `${hashing.memoryCost}:${hashing.timeCost}:${hashing.parallelism}`;
  let decoy = decoyHashes.get(key);
  if (!decoy) {
    decoy = hashPassword(crypto.randomBytes(16).toString('base64url'), hashing);
    decoyHashes.set(key, decoy);
  }
  return decoy;
}

/**
 * Checks a password against a stored hash: its NFKC form, then, for a hash made before passwords were
 * normalized, the password as typed if that differs. With no hash (unknown user, or a user without a
 * password), a decoy hash of the same cost (`hashing`, the service's parameters) is checked the same
 * number of times instead, so the answer takes the same time and nobody learns which identifiers exist.
 */
export async function checkPassword(
  storedHash: string | undefined,
  password: string,
  hashing: PasswordHashing = defaults.passwordHashing,
): Promise<PasswordCheck> {
  const normalized = normalizePassword(password);
  const typedDiffers = normalized !== password;
  if (storedHash === undefined) {
    const decoy = await decoyHash(hashing);
    await verify(decoy, normalized);
    if (typedDiffers) await verify(decoy, password);
    return 'mismatch';
  }
  if (await verify(storedHash, normalized)) return 'match';
  // A hash of a normalized password never matches a string that is not normalized: this only finds
  // hashes made before normalization.
  if (typedDiffers && (await verify(storedHash, password))) return 'match_unnormalized';
  return 'mismatch';
}

/** Verifies a password against a stored hash (see checkPassword); false with no hash, after the decoy. */
export async function verifyPassword(
  storedHash: string | undefined,
  password: string,
  hashing: PasswordHashing = defaults.passwordHashing,
): Promise<boolean> {
  return (await checkPassword(storedHash, password, hashing)) !== 'mismatch';
}

/** Whether `password` matches `hash`; a hash argon2 can't read matches nothing. */
async function verify(hash: string, password: string): Promise<boolean> {
  return argon2Slots(async () => {
    try {
      return await argon2.verify(hash, password);
    } catch {
      return false;
    }
  });
}

/** Warms the decoy so the first unknown-identifier login is not slower than the others. */
export async function prepareDecoyHash(hashing: PasswordHashing = defaults.passwordHashing): Promise<void> {
  await decoyHash(hashing);
}
