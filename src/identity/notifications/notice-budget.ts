import type { Clock } from '../../clock.js';

/**
 * How many security notices of one kind a user is sent an hour, at most, by one node. A new-device
 * notice follows every sign-in without the device cookie, and the account's holder (or whoever has its
 * password) can sign in in a loop from address after address: each was a message through the one
 * transport the whole service shares (an SMTP pool of five connections, a gateway's quota), and other
 * people's sign-in and reset codes waited behind them. Five in an hour tell the owner all there is to
 * know; each kind has a budget of its own, so a flood of sign-ins never silences a change's notice.
 */
export const noticesPerHour = 5;

const hourMs = 60 * 60 * 1000;

/**
 * The notices sent lately, by user and kind, in memory: a budget is checked before the change's
 * answer leaves, with nothing to wait for. Bounded: past `maxKeys` the key used longest ago goes
 * (its budget starts again: a caller would need as many notices to other keys first).
 */
export class NoticeBudget {
  /** Send times (ms) within the last hour, oldest first, by key; the map's order is the last use. */
  readonly #sent = new Map<string, number[]>();

  constructor(
    private readonly clock: Clock,
    private readonly maxKeys = 10_000,
  ) {}

  /** Whether a notice of `kind` may go to `userId` now; counts it when it may. */
  take(userId: string, kind: string): boolean {
    const key = `${userId} ${kind}`;
    const now = this.clock.now().getTime();
    const recent = (this.#sent.get(key) ?? []).filter((at) => at > now - hourMs);
    this.#sent.delete(key);
    const allowed = recent.length < noticesPerHour;
    if (allowed) recent.push(now);
    if (this.#sent.size >= this.maxKeys) this.#sent.delete(this.#sent.keys().next().value!);
    this.#sent.set(key, recent);
    return allowed;
  }
}
