/** Exponential backoff with jitter for reconnects (client-go's defaults: 0.8 s doubling up to 30 s). */
export interface BackoffOptions {
  /** First delay (default 800 ms). */
  readonly initialMs?: number;
  /** Ceiling (default 30 s). */
  readonly maxMs?: number;
  /** Random extra of up to this fraction of the delay (default 0.5). */
  readonly jitter?: number;
}

export class Backoff {
  readonly #initial: number;
  readonly #max: number;
  readonly #jitter: number;
  #next: number;

  constructor(opts: BackoffOptions = {}) {
    this.#initial = opts.initialMs ?? 800;
    this.#max = opts.maxMs ?? 30_000;
    this.#jitter = opts.jitter ?? 0.5;
    this.#next = this.#initial;
  }

  /** The delay to wait now; the one after it doubles (up to the ceiling). */
  next(): number {
    const base = this.#next;
    this.#next = Math.min(this.#max, base * 2);
    return Math.min(this.#max, Math.round(base * (1 + Math.random() * this.#jitter)));
  }

  reset(): void {
    this.#next = this.#initial;
  }
}
