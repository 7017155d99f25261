import type { RequestWait } from '../../http/waiting-requests.js';

/**
 * A few slots of costly work (argon2id: a core and 19 MiB each) shared between client addresses in
 * turns, not first come, first served. Queued in one line, a burst from one address (128 requests it
 * may hold at once, each checking a right password it knows: nothing locks) put every other person's
 * sign-in behind all of it, seconds at production cost. Here each address has a line of its own, and
 * a free slot takes the next job of the address whose turn it is, so a newcomer waits for at most one
 * job of each other address that has work waiting, however much that is.
 */
export class TurnsPerAddress {
  #running = 0;
  /** The waiting jobs of each address; the map's order is the order of turns. */
  readonly #lines = new Map<string, (() => void)[]>();

  constructor(private readonly slots: number) {}

  /**
   * Runs `work` in `address`'s turn. While it waits, `wait` (waiting-requests.ts) may end the wait:
   * the job leaves its line and the promise rejects with the wait's answer.
   */
  run<T>(address: string, work: () => Promise<T>, wait?: RequestWait): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const leave = () => {
        const line = this.#lines.get(address);
        const index = line?.indexOf(start) ?? -1;
        if (index < 0) return;
        line!.splice(index, 1);
        if (line!.length === 0) this.#lines.delete(address);
        reject(wait!.signal.reason);
      };
      const start = () => {
        wait?.signal.removeEventListener('abort', leave);
        wait?.end();
        this.#running += 1;
        Promise.resolve()
          .then(work)
          .then(resolve, reject)
          .finally(() => {
            this.#running -= 1;
            this.#startNext();
          });
      };
      const line = this.#lines.get(address);
      if (line) line.push(start);
      else this.#lines.set(address, [start]);
      wait?.signal.addEventListener('abort', leave, { once: true });
      this.#startNext();
    });
  }

  #startNext(): void {
    while (this.#running < this.slots) {
      const next = this.#lines.entries().next();
      if (next.done) return;
      const [address, line] = next.value;
      // The address goes to the back of the turns, with what it still has waiting.
      this.#lines.delete(address);
      const start = line.shift()!;
      if (line.length > 0) this.#lines.set(address, line);
      start();
    }
  }
}
