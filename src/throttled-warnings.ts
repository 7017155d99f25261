import type { Clock } from './clock.js';
import type { Logger } from './logger.js';

/** How long a burst of one kind of warning lasts: one line for it, the rest counted. */
export const warningBurstMs = 60_000;

/**
 * Warnings about what callers send (refused input, spent limits): expected, repeatable at will, so
 * never logged with a stack, and at most one line per kind per burst. A flood of bad requests writes
 * one line; the first warning of that kind after the burst carries `suppressed`, how many were not
 * written meanwhile. Kinds are a handful of constants of ours, so this keeps one entry per kind.
 */
export class ThrottledWarnings {
  readonly #bursts = new Map<string, { endsAt: number; suppressed: number }>();

  constructor(
    private readonly logger: Logger,
    private readonly clock: Clock,
  ) {}

  warn(kind: string, fields: Record<string, unknown>, message: string): void {
    const now = this.clock.now().getTime();
    const burst = this.#bursts.get(kind);
    if (burst && now < burst.endsAt) {
      burst.suppressed += 1;
      return;
    }
    this.#bursts.set(kind, { endsAt: now + warningBurstMs, suppressed: 0 });
    const suppressed = burst?.suppressed ? { suppressed: burst.suppressed } : {};
    this.logger.warn({ kind, ...fields, ...suppressed }, message);
  }
}
