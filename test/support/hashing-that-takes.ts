import argon2 from 'argon2';
import type { PasswordHashing } from '../../src/identity/passwords/password-hash.js';

const memoryCost = 65536;

/**
 * Argon2id settings whose hash takes about `milliseconds` on this machine: race tests act "while a
 * password is being hashed", and a fixed cost that takes a second on one VM is over in 150 ms on
 * another. One pass is timed and the passes scaled to it (argon2's time grows linearly with them).
 */
export async function hashingThatTakes(milliseconds: number): Promise<PasswordHashing> {
  const settings = { type: argon2.argon2id, memoryCost, timeCost: 2, parallelism: 1 } as const;
  await argon2.hash('warm-up', settings);
  const started = performance.now();
  await argon2.hash('one measure', settings);
  const perPass = (performance.now() - started) / settings.timeCost;
  return { memoryCost, timeCost: Math.max(2, Math.ceil(milliseconds / perPass)), parallelism: 1 };
}
