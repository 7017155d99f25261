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
