import { z } from 'zod';
import type { Queryable } from '../../db/database.js';
import { integerColumnSchema } from '../../db/integer-column.js';
import type { FlowKind } from './flow-session.js';

/** A step of a configured funnel (spec: Step: stepId, mandatory, order) plus its screen group. */
export interface FunnelStep {
  stepId: string;
  /** The user can't disable or change it. */
  mandatory: boolean;
  order: number;
  /** Steps sharing a group are shown on one screen with one Continue button. */
  group?: string | undefined;
  /** The step's own configuration in this funnel (the `oauth` step: `{ provider }`). */
  settings?: StepSettings | undefined;
}

/** A step's configuration in a funnel: flat names and plain values (checked by the step, `checkSettings`). */
export type StepSettings = Record<string, string | number | boolean>;
export const stepSettingsSchema = z
  .record(z.string().min(1).max(100), z.union([z.string().max(500), z.number(), z.boolean()]))
  .refine((settings) => Object.keys(settings).length <= 20, 'at most 20 settings');

export const funnelStepSchema = z.object({
  stepId: z.string().min(1).max(100),
  mandatory: z.boolean(),
  order: integerColumnSchema,
  group: z.string().min(1).max(100).optional(),
  settings: stepSettingsSchema.optional().describe('The step’s configuration (oauth: { provider })'),
});

interface FunnelStepRow {
  step_id: string;
  mandatory: boolean;
  position: number;
  screen_group: string | null;
  settings: StepSettings | null;
}

/** The configured funnel of a flow (table auth_flow_steps), in order. */
export async function loadFunnel(db: Queryable, flow: FlowKind): Promise<FunnelStep[]> {
  const rows: FunnelStepRow[] = await db('auth_flow_steps')
    .where({ flow })
    .orderBy([{ column: 'position' }, { column: 'step_id' }])
    .select('step_id', 'mandatory', 'position', 'screen_group', 'settings');
  return rows.map((row) => ({
    stepId: row.step_id,
    mandatory: row.mandatory,
    order: row.position,
    ...(row.screen_group ? { group: row.screen_group } : {}),
    ...(row.settings ? { settings: row.settings } : {}),
  }));
}

/**
 * Replaces a flow's funnel (the administrator's configuration). The caller checks the step ids exist;
 * a funnel is written whole, in one statement pair inside the caller's transaction.
 */
export async function replaceFunnel(
  db: Queryable,
  flow: FlowKind,
  steps: FunnelStep[],
  now: Date,
): Promise<void> {
  const checked = z.array(funnelStepSchema).min(1).parse(steps);
  if (new Set(checked.map((step) => step.stepId)).size !== checked.length) {
    throw new Error(`the ${flow} funnel names a step twice`);
  }
  await db('auth_flow_steps').where({ flow }).delete();
  await db('auth_flow_steps').insert(
    checked.map((step) => ({
      flow,
      step_id: step.stepId,
      mandatory: step.mandatory,
      position: step.order,
      screen_group: step.group ?? null,
      settings: step.settings ? (JSON.stringify(step.settings) as never) : null,
      created_at: now,
      updated_at: now,
    })),
  );
}
