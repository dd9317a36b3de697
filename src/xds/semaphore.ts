/** A counting semaphore for async code: at most `limit` holders; waiters are served FIFO. */
import { MeshError } from '../util/errors.js';

export class Semaphore {
  readonly limit: number;
  #held = 0;
  readonly #waiters: Array<() => void> = [];

  constructor(limit: number) {
    if (!Number.isInteger(limit) || limit < 1) {
      throw new MeshError('INVALID_ARGUMENT', `semaphore limit must be a positive integer, got ${limit}`);
    }
    this.limit = limit;
  }

  /** Resolves once a slot is held; pair every acquire with one release. */
  acquire(): Promise<void> {
    if (this.#held < this.limit) {
      this.#held++;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  tryAcquire(): boolean {
    if (this.#held >= this.limit) return false;
    this.#held++;
    return true;
  }

  release(): void {
    const next = this.#waiters.shift();
    // Hand the slot straight to the oldest waiter, so a late acquirer cannot overtake it.
    if (next !== undefined) next();
    else if (this.#held > 0) this.#held--;
    else throw new MeshError('INTERNAL', 'semaphore released more often than acquired');
  }

  held(): number {
    return this.#held;
  }

  waiting(): number {
    return this.#waiters.length;
  }
}
