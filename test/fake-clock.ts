/** A deterministic Clock for unit tests: time moves only when the test calls advance(). */
import type { Clock, TimerHandle } from '../src/util/clock.js';

interface Timer {
  readonly id: number;
  readonly at: number;
  readonly fn: () => void;
}

export class FakeClock implements Clock {
  #now: number;
  #seq = 0;
  #timers: Timer[] = [];

  constructor(start = 0) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const t: Timer = { id: ++this.#seq, at: this.#now + Math.max(0, ms), fn };
    this.#timers.push(t);
    return t.id;
  }

  clearTimeout(handle: TimerHandle): void {
    this.#timers = this.#timers.filter((t) => t.id !== handle);
  }

  /** Timers not yet fired. */
  pendingTimers(): number {
    return this.#timers.length;
  }

  /**
   * Moves time forward by `ms`, firing due timers in due-time order (ties in creation order),
   * each with now() set to its due time; timers set while advancing fire too if due in the window.
   */
  advance(ms: number): void {
    const end = this.#now + ms;
    for (;;) {
      let next: Timer | undefined;
      for (const t of this.#timers) if (t.at <= end && (next === undefined || t.at < next.at)) next = t;
      if (next === undefined) break;
      const fire = next;
      this.#timers = this.#timers.filter((t) => t !== fire);
      this.#now = fire.at;
      fire.fn();
    }
    this.#now = end;
  }
}

/** Lets pending Promise callbacks run (a macrotask turn), without depending on elapsed time. */
export function flushMicrotasks(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** A Promise with its resolve/reject exposed, for pushes the test finishes when it chooses. */
export interface Deferred<T = void> {
  readonly promise: Promise<T>;
  resolve(value: T): void;
  reject(err: unknown): void;
}

export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}
