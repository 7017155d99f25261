import type { FlowKind } from './flow-session.js';
import type { AuthFlowStep } from './step.js';

/**
 * The steps an auth flow can use, by id: the built-in ones and those plugins register. A step may serve
 * only some flows (e.g. `password` checks a password at login but sets one at registration): the
 * implementation registered for the flow wins over one registered for all flows.
 */
export class StepRegistry {
  readonly #steps = new Map<string, AuthFlowStep<never>[]>();

  register<Input>(step: AuthFlowStep<Input>): this {
    const registered = this.#steps.get(step.id) ?? [];
    const overlaps = registered.some((other) =>
      !other.flows || !step.flows
        ? !other.flows && !step.flows
        : other.flows.some((flow) => step.flows!.includes(flow)),
    );
    if (overlaps) throw new Error(`auth flow step ${step.id} is already registered`);
    this.#steps.set(step.id, [...registered, step as AuthFlowStep<never>]);
    return this;
  }

  /** The step serving `flow` (absent: the general one, else any). */
  get(id: string, flow?: FlowKind): AuthFlowStep<unknown> | undefined {
    const registered = this.#steps.get(id) ?? [];
    const found =
      (flow && registered.find((step) => step.flows?.includes(flow))) ??
      registered.find((step) => !step.flows) ??
      (flow ? undefined : registered[0]);
    return found as AuthFlowStep<unknown> | undefined;
  }

  has(id: string, flow?: FlowKind): boolean {
    return this.get(id, flow) !== undefined;
  }

  ids(): string[] {
    return [...this.#steps.keys()];
  }
}
