import { EventEmitter } from 'node:events';
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

/** One notice a budget counted: whose, of which kind, and when (ms). */
export interface CountedNotice {
  userId: string;
  kind: string;
  at: number;
}

const counted = new EventEmitter();

/**
 * Calls `listener` whenever a budget of this process counts a notice it lets go. In a cluster
 * (HTTP_WORKERS > 1) each worker has its own budget, and a caller who opened new connections until
 * another worker took one got five notices a worker: src/cluster/worker-notices.ts tells the others.
 */
export function onNoticeCounted(listener: (notice: CountedNotice) => void): () => void {
  counted.on('counted', listener);
  return () => counted.off('counted', listener);
}

/** Tells this process's budgets of a notice another worker sent: it counts against theirs too. */
export function countSiblingNotice(notice: CountedNotice): void {
  counted.emit('sibling', notice);
}

/**
 * The notices sent lately, by user and kind, in memory: a budget is checked before the change's
 * answer leaves, with nothing to wait for. Bounded: past `maxKeys` the key used longest ago goes
 * (its budget starts again: a caller would need as many notices to other keys first).
 */
export class NoticeBudget {
  /** Send times (ms) within the last hour, oldest first, by key; the map's order is the last use. */
  readonly #sent = new Map<string, number[]>();
  readonly #stopCountingSiblings: () => void;

  constructor(
    private readonly clock: Clock,
    private readonly maxKeys = 10_000,
  ) {
    const onSibling = ({ userId, kind, at }: CountedNotice) => this.#count(userId, kind, at);
    counted.on('sibling', onSibling);
    this.#stopCountingSiblings = () => counted.off('sibling', onSibling);
  }

  /** Whether a notice of `kind` may go to `userId` now; counts it when it may. */
  take(userId: string, kind: string): boolean {
    const now = this.clock.now().getTime();
    const allowed = this.#recent(userId, kind, now).length < noticesPerHour;
    if (allowed) {
      this.#count(userId, kind, now);
      counted.emit('counted', { userId, kind, at: now });
    }
    return allowed;
  }

  close(): void {
    this.#stopCountingSiblings();
  }

  /** Counts a notice sent at `at`, by this budget or (in a cluster) a sibling worker's. */
  #count(userId: string, kind: string, at: number): void {
    const recent = this.#recent(userId, kind, this.clock.now().getTime());
    recent.push(at);
    recent.sort((a, b) => a - b);
    this.#sent.set(`${userId} ${kind}`, recent);
  }

  /** The key's sends within the hour, oldest first; the key becomes the last used (the map's end). */
  #recent(userId: string, kind: string, now: number): number[] {
    const key = `${userId} ${kind}`;
    const recent = (this.#sent.get(key) ?? []).filter((at) => at > now - hourMs);
    this.#sent.delete(key);
    if (this.#sent.size >= this.maxKeys) this.#sent.delete(this.#sent.keys().next().value!);
    this.#sent.set(key, recent);
    return recent;
  }
}
