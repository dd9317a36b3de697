/**
 * A byte budget for responses on their way to proxies, shared by every stream. A response takes
 * its size from the budget before it is encoded and gives it back once the transport has taken
 * the bytes, so encoded responses waiting on slow readers — a reconnect storm of thousands of
 * sidecars asking for megabytes of CDS at once — stay within the budget instead of piling up in
 * memory. Waiters are served in arrival order; one response larger than the whole budget still
 * goes, alone.
 */
import { MeshError } from '../util/errors.js';

/** What a response on the wire holds of the budget; give it back once (later calls do nothing). */
export type BudgetRelease = () => void;

interface Waiter {
  readonly bytes: number;
  readonly grant: () => void;
}

export class WriteBudget {
  readonly limit: number;
  #used = 0;
  #peak = 0;
  readonly #waiters: Waiter[] = [];

  constructor(limitBytes: number) {
    if (!Number.isInteger(limitBytes) || limitBytes < 1)
      throw new MeshError('INVALID_ARGUMENT', `write budget must be a positive integer of bytes, got ${limitBytes}`);
    this.limit = limitBytes;
  }

  /** Resolves once `bytes` are held (at once when they fit and nobody waits). */
  acquire(bytes: number): Promise<BudgetRelease> {
    const n = Math.max(0, Math.ceil(bytes));
    if (this.#waiters.length === 0 && this.#fits(n)) return Promise.resolve(this.#take(n));
    return new Promise((resolve) => this.#waiters.push({ bytes: n, grant: () => resolve(this.#take(n)) }));
  }

  /** Bytes held now, the most ever held, and responses waiting. */
  stats(): { used: number; peak: number; waiting: number } {
    return { used: this.#used, peak: this.#peak, waiting: this.#waiters.length };
  }

  #fits(n: number): boolean {
    return this.#used === 0 || this.#used + n <= this.limit;
  }

  #take(n: number): BudgetRelease {
    this.#used += n;
    this.#peak = Math.max(this.#peak, this.#used);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#used -= n;
      this.#grantWaiters();
    };
  }

  #grantWaiters(): void {
    for (let w = this.#waiters[0]; w !== undefined && this.#fits(w.bytes); w = this.#waiters[0]) {
      this.#waiters.shift();
      w.grant();
    }
  }
}
