import type { Clock } from '../../src/clock.js';

/** A clock tests move by hand: time-based rules are tested without sleeping. */
export class ManualClock implements Clock {
  #time: number;

  constructor(start: Date | number = Date.now()) {
    this.#time = typeof start === 'number' ? start : start.getTime();
  }

  now(): Date {
    return new Date(this.#time);
  }

  advance(milliseconds: number): void {
    this.#time += milliseconds;
  }

  advanceSeconds(seconds: number): void {
    this.advance(seconds * 1000);
  }
}

/** The system's time, moved by hand: time still passes (for what waits on it), and a test skips ahead. */
export class MovableClock implements Clock {
  #offsetMs = 0;

  now(): Date {
    return new Date(Date.now() + this.#offsetMs);
  }

  advance(ms: number): void {
    this.#offsetMs += ms;
  }
}
