import { z } from 'zod';
import { ApiError } from '../../http/api-error.js';
import type { FlowKind } from '../auth-flow/flow-session.js';
import type { AuthFlowStep, StepContext, StepResult } from '../auth-flow/step.js';

/** The messages of the frame protocol (docs/plugins.md). */
export const frameMessages = { init: 'idp-step:init', submit: 'idp-step:submit' } as const;

export interface FrameStepDefinition<Input> {
  id: string;
  flows?: readonly FlowKind[];
  title: string;
  /** The plugin's page (absolute https URL, or http on loopback for development); another origin. */
  src: string;
  /** What the frame's submit message carries, validated here on the server. */
  input: z.ZodType<Input>;
  run(context: StepContext, input: Input): Promise<StepResult>;
}

/**
 * A plugin step delivered as an isolated frame (docs/plugins.md): the page embeds `src` in a sandboxed
 * iframe and relays its one `idp-step:submit` message (checked: from that frame, from its origin) as
 * the step's input, a JSON `payload`. The frame must be of another origin than the service: with
 * `allow-same-origin` (needed for its origin to be checkable) a same-origin frame could reach the page.
 */
export function createFrameStep<Input>(
  definition: FrameStepDefinition<Input>,
  service: { issuer: string },
): AuthFlowStep<{ payload: string }> {
  const src = new URL(definition.src);
  const loopback = ['127.0.0.1', 'localhost', '[::1]'].includes(src.hostname);
  if (src.protocol !== 'https:' && !(src.protocol === 'http:' && loopback)) {
    throw new Error(`plugin frame ${definition.id}: src must be https (http only on loopback)`);
  }
  if (src.origin === new URL(service.issuer).origin) {
    throw new Error(`plugin frame ${definition.id}: src must be of another origin than the service`);
  }
  return {
    id: definition.id,
    ...(definition.flows ? { flows: definition.flows } : {}),
    // Not strict: a page's form posts its own fields (flow, step) beside the payload.
    input: z.object({ payload: z.string().min(1).max(16_384) }),
    async run(context, { payload }) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(payload);
      } catch {
        throw new ApiError(400, 'invalid_input', 'The step’s frame sent something that is not JSON.');
      }
      const input = definition.input.safeParse(parsed);
      if (!input.success) {
        throw new ApiError(400, 'invalid_input', 'The step’s frame sent an answer that is not valid.', {
          issues: input.error.issues.map((issue) => ({ path: issue.path.join('.'), message: issue.message })),
        });
      }
      return definition.run(context, input.data);
    },
    screen: () => ({
      title: definition.title,
      fields: [],
      data: { frame: { src: src.toString(), origin: src.origin } },
    }),
  };
}
