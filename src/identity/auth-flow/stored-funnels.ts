import type { Database } from '../../db/database.js';
import type { FunnelSource } from './flow-engine.js';
import type { FlowKind } from './flow-session.js';
import { loadFunnel, type FunnelStep } from './funnel-steps.js';

/** The funnels the administrator configured (table auth_flow_steps), read at each flow start. */
export class StoredFunnels implements FunnelSource {
  constructor(private readonly db: Database) {}

  funnelFor(flow: FlowKind): Promise<FunnelStep[]> {
    return loadFunnel(this.db, flow);
  }

  async stepsFor(flow: FlowKind): Promise<string[]> {
    return (await this.funnelFor(flow)).map((step) => step.stepId);
  }
}
