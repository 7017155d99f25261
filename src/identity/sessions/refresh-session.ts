import type { Database } from '../../db/database.js';
import { auditEventTypes, writeAuditEvent } from '../audit/audit-log.js';
import { ApiError } from '../../http/api-error.js';
import { RateLimitExceeded, type RateLimitRule, type RateLimits } from '../../http/rate-limit.js';
import type { RequestInfo } from '../auth-flow/step.js';
import { findUserById } from '../users/user.js';
import { accessTokenForSession, type MainAuthSigning } from './main-auth-tokens.js';
import {
  consumeRefreshToken,
  findRefreshToken,
  issueRefreshToken,
  recordReplacement,
  type RefreshToken,
} from './refresh-tokens.js';
import type { SessionPolicy } from './session-policy.js';
import { findActiveSession, revokeSession, touchSession } from './sessions.js';
import type { SessionTokens } from './start-session.js';
import { defaultRateLimitRule } from '../../defaults.js';

/** POST auth/refresh: 30 per minute per IP + user (spec: Limits). */
export const refreshRateLimit: RateLimitRule = defaultRateLimitRule('identity-refresh');

export interface RefreshDependencies {
  db: Database;
  signing: MainAuthSigning;
  rateLimits: RateLimits;
  sessionPolicy: SessionPolicy;
}

const refreshRefused = () =>
  new ApiError(401, 'invalid_refresh_token', 'The session has ended. Sign in again.');

/**
 * Rotates a refresh token (spec: in one write transaction): the presented token is used up by a
 * compare-and-set, the next one is stored, the session's activity recorded and a new access token
 * signed with the user's current roles. Of parallel refreshes with one token exactly one wins.
 *
 * A token that is no longer live is refused with 401; if it was revoked (rotated out, or its session
 * ended) it is the sign of a stolen copy being used: its session is revoked and the audit log gets
 * identity.refresh_token.reuse_detected (the potential attack), in one transaction.
 */
export async function refreshSession(
  deps: RefreshDependencies,
  presented: string,
  request: RequestInfo,
  now: Date,
): Promise<SessionTokens> {
  const { db, signing } = deps;
  const known = await findRefreshToken(db, presented);
  try {
    await deps.rateLimits.consume(refreshRateLimit, `${request.addressBlock}:${known?.userId ?? 'unknown'}`);
  } catch (error) {
    throw error instanceof RateLimitExceeded ? error.toApiError() : error;
  }
  if (!known) throw refreshRefused();

  const rotated = await db.transaction(async (trx) => {
    // The session's row first, as every revocation takes them (the session, then its tokens): taken
    // the other way round, a refresh and a logout racing each other deadlocked, and PostgreSQL mostly
    // aborted the logout, which answered 500 and left the session and the refreshed token alive (a
    // copied cookie refreshed in a loop kept the owner from logging out). Now one waits for the other.
    // (The token's session is the one `known` names: a refresh token never changes session.)
    const session = await findActiveSession(trx, known.sessionId, deps.sessionPolicy, now, {
      lock: 'update',
    });
    const consumed = await consumeRefreshToken(trx, presented, now);
    if (!consumed) return undefined;
    const user = session ? await findUserById(trx, session.userId) : undefined;
    // Rolls the consumption back too: nothing changes for a session that is over (revoked, expired,
    // or idle past the policy's timeout).
    if (!session || user?.status !== 'active') throw refreshRefused();
    const next = await issueRefreshToken(trx, session, now);
    await recordReplacement(trx, consumed.id, next.id);
    await touchSession(trx, session.id, next.id, now);
    const access = await accessTokenForSession(trx, signing, session, next.id, now);
    return {
      session: { ...session, refreshTokenId: next.id, lastActivityAt: now },
      accessToken: access.token,
      expiresIn: access.expiresIn,
      refreshToken: { value: next.value, expiresAt: session.expiresAt },
    } satisfies SessionTokens;
  });
  if (rotated) return rotated;

  const token = await findRefreshToken(db, presented);
  if (token?.isRevoked) await handleReuse(db, token, request, now);
  throw refreshRefused();
}

async function handleReuse(
  db: Database,
  token: RefreshToken,
  request: RequestInfo,
  now: Date,
): Promise<void> {
  await db.transaction(async (trx) => {
    const sessionWasLive = await revokeSession(
      trx,
      token.userId,
      token.sessionId,
      'refresh_token_reuse',
      now,
    );
    await writeAuditEvent(
      trx,
      {
        type: auditEventTypes.refreshTokenReuseDetected,
        userId: token.userId,
        ip: request.ip,
        userAgent: request.userAgent,
        details: {
          potentialAttack: true,
          sessionId: token.sessionId,
          refreshTokenId: token.id,
          // A token rotated out of a live session is the classic theft signal; one of an ended
          // session may also be a stale tab, still worth recording.
          sessionRevokedNow: sessionWasLive,
        },
      },
      now,
    );
  });
}
