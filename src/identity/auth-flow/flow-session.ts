import { randomSecret, sha256 } from '../../crypto/digest.js';
import type { Queryable } from '../../db/database.js';
import { defaults } from '../../defaults.js';

export const flowKinds = ['login', 'registration'] as const;
export type FlowKind = (typeof flowKinds)[number];

/** Lifetime of a flow session (spec: Limits). */
export const flowSessionTtlMs = defaults.lifetimes.flowSession * 1000;

/** What a flow must be continued with: the interaction and the browser it was started for, if any. */
export type FlowBinding = Pick<FlowContext, 'interactionUid' | 'browser'>;

export interface FlowContext {
  /** The OIDC interaction this flow signs in for, if any; the flow can't be used for another. */
  interactionUid?: string;
  /**
   * The SHA-256 of the cookie of the browser whose sign-in page started the flow (src/oidc/flow-browser.ts):
   * the pages go on with it only in that browser. Flows of the identity API have none.
   */
  browser?: string;
  ip?: string;
  userAgent?: string;
  /** The language of the page running the flow: codes are sent in it. */
  lang?: string;
}

/**
 * The funnel flags of the session's steps as they were when the flow started (an administrator's change
 * applies to flows started after it), and whether the funnel was already made the identified user's own.
 */
export interface FlowPlan {
  steps?: Record<
    string,
    { mandatory: boolean; group?: string | undefined; settings?: Record<string, unknown> | undefined }
  >;
  personalizedFor?: string;
}

/** A flow between two steps (table auth_flow_sessions). `id` is the single-use value the client holds. */
export interface FlowSession {
  id: string;
  flow: FlowKind;
  completedSteps: string[];
  pendingSteps: string[];
  tempData: Record<string, unknown>;
  userId: string | undefined;
  context: FlowContext;
  expiresAt: Date;
  plan: FlowPlan;
}

interface FlowSessionRow {
  id_hash: string;
  flow: FlowKind;
  completed_steps: string[];
  pending_steps: string[];
  temp_data: Record<string, unknown>;
  user_id: string | null;
  context: FlowContext;
  expires_at: Date;
  plan: FlowPlan | null;
}

function fromRow(id: string, row: FlowSessionRow): FlowSession {
  return {
    id,
    flow: row.flow,
    completedSteps: row.completed_steps,
    pendingSteps: row.pending_steps,
    tempData: row.temp_data,
    userId: row.user_id ?? undefined,
    context: row.context,
    expiresAt: row.expires_at,
    plan: row.plan ?? {},
  };
}

export async function createFlowSession(
  db: Queryable,
  flow: FlowKind,
  steps: string[],
  context: FlowContext,
  now: Date,
  plan: FlowPlan = {},
  tempData: Record<string, unknown> = {},
): Promise<FlowSession> {
  const id = randomSecret(32);
  const [row] = await db<FlowSessionRow>('auth_flow_sessions').insert(
    {
      id_hash: sha256(id),
      flow,
      completed_steps: [],
      pending_steps: steps,
      temp_data: JSON.stringify(tempData) as never,
      context: JSON.stringify(context) as never,
      plan: JSON.stringify(plan) as never,
      expires_at: new Date(now.getTime() + flowSessionTtlMs),
    },
    '*',
  );
  return fromRow(id, row!);
}

/** The live (not expired, not used) flow session with this id. */
export async function findFlowSession(
  db: Queryable,
  id: string,
  now: Date,
): Promise<FlowSession | undefined> {
  const row = await db<FlowSessionRow>('auth_flow_sessions')
    .where({ id_hash: sha256(id) })
    .where('expires_at', '>', now)
    .first();
  return row ? fromRow(id, row) : undefined;
}

export interface FlowSessionChange {
  completedSteps: string[];
  pendingSteps: string[];
  tempData: Record<string, unknown>;
  userId: string | undefined;
  /** Absent: unchanged. */
  plan?: FlowPlan;
}

/**
 * Moves a session to its next state under a new id, as compare-and-set on the old id: of two requests
 * presenting the same id, one wins and the other finds it gone. Returns undefined for the loser.
 */
export async function advanceFlowSession(
  db: Queryable,
  session: FlowSession,
  change: FlowSessionChange,
  now: Date,
): Promise<FlowSession | undefined> {
  const id = randomSecret(32);
  const [row] = await db<FlowSessionRow>('auth_flow_sessions')
    .where({ id_hash: sha256(session.id) })
    .where('expires_at', '>', now)
    .update(
      {
        id_hash: sha256(id),
        completed_steps: change.completedSteps,
        pending_steps: change.pendingSteps,
        temp_data: JSON.stringify(change.tempData) as never,
        user_id: change.userId ?? null,
        ...(change.plan ? { plan: JSON.stringify(change.plan) as never } : {}),
      },
      '*',
    );
  return row ? fromRow(id, row) : undefined;
}

/** Ends a session (flow completed or abandoned); false when it was already gone. */
export async function endFlowSession(db: Queryable, id: string): Promise<boolean> {
  return (
    (await db('auth_flow_sessions')
      .where({ id_hash: sha256(id) })
      .delete()) > 0
  );
}

/**
 * The live flow whose `oauth` step holds this token, if any: whom it has identified already (an earlier
 * step of its funnel; the provider's callback must then meet that account and create or link nothing)
 * and the provider its step names (absent in flows prepared before it was recorded). Undefined when no
 * live flow holds the token: a made-up or expired one, for which the callback must run no account rules.
 */
export async function liveOAuthStep(
  db: Queryable,
  stepToken: string,
  now: Date,
): Promise<{ identifiedUserId: string | undefined; provider: string | undefined } | undefined> {
  const row: { user_id: string | null; provider: string | null } | undefined = await db('auth_flow_sessions')
    .whereRaw(`temp_data->>'oauthStepToken' = ?`, [stepToken])
    .where('expires_at', '>', now)
    .first('user_id', db.raw(`temp_data->>'oauthStepProvider' as provider`));
  return row
    ? { identifiedUserId: row.user_id ?? undefined, provider: row.provider ?? undefined }
    : undefined;
}
