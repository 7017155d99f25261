import { randomSecret, sha256 } from '../../crypto/digest.js';
import type { Queryable } from '../../db/database.js';

/** How long a provider sign-in waits for its flow's `oauth` step to take it. */
export const stepResultLifetimeMs = 10 * 60 * 1000;

/**
 * The account a provider sign-in resolved to, for the flow whose `oauth` step holds `token` (table
 * federation_step_results, the token kept as its SHA-256). Answers the proof the step must be submitted
 * with: it goes only to the browser that went through the provider, so a start link opened by someone
 * else (sent to them by whoever holds the flow) can't hand their sign-in to that flow. Signing in again
 * with the same token before the step took it replaces the answer; once taken it stays taken.
 */
export async function recordStepResult(
  db: Queryable,
  result: { token: string; provider: string; userId: string },
  now: Date,
): Promise<string> {
  const proof = randomSecret(32);
  await db('federation_step_results')
    .insert({
      token_hash: sha256(result.token),
      provider: result.provider,
      user_id: result.userId,
      proof_hash: sha256(proof),
      expires_at: new Date(now.getTime() + stepResultLifetimeMs),
      created_at: now,
    })
    .onConflict('token_hash')
    .merge(['provider', 'user_id', 'proof_hash', 'expires_at']);
  return proof;
}

/** Takes the answer once, with its proof (one conditional UPDATE): the user it signed in, or nothing. */
export async function takeStepResult(
  db: Queryable,
  token: string,
  provider: string,
  proof: string,
  now: Date,
): Promise<string | undefined> {
  const [row] = (await db('federation_step_results')
    .where({ token_hash: sha256(token), provider, proof_hash: sha256(proof) })
    .whereNull('used_at')
    .where('expires_at', '>', now)
    .update({ used_at: now }, ['user_id'])) as { user_id: string }[];
  return row?.user_id;
}
