/**
 * The work loop of a controller (client-go's workqueue, reduced to what meshpilot's controllers
 * need): keys are queued once however often they are added, processed in order in batches, and a
 * key whose reconcile answers false is retried after an exponential backoff shared by the batch.
 */
import { Backoff, type BackoffOptions } from './backoff.js';

export class ReconcileQueue {
  readonly #queue = new Set<string>();
  readonly #backoff: Backoff;
  readonly #reconcile: (key: string) => Promise<boolean>;
  #wake: (() => void) | undefined;
  #retryTimer: NodeJS.Timeout | undefined;

  /** `reconcile` answers false when the key must be tried again later. */
  constructor(reconcile: (key: string) => Promise<boolean>, backoff: BackoffOptions) {
    this.#reconcile = reconcile;
    this.#backoff = new Backoff(backoff);
  }

  add(key: string | undefined): void {
    if (key === undefined || key === '') return;
    this.#queue.add(key);
    this.#wake?.();
  }

  /** Processes keys until `signal` aborts. */
  async run(signal: AbortSignal): Promise<void> {
    const onAbort = (): void => this.#wake?.();
    signal.addEventListener('abort', onAbort);
    try {
      while (!signal.aborted) {
        if (this.#queue.size === 0) await new Promise<void>((resolve) => (this.#wake = resolve));
        const batch = [...this.#queue];
        this.#queue.clear();
        let failed = false;
        for (const key of batch) {
          if (signal.aborted) break;
          if (!(await this.#reconcile(key))) {
            failed = true;
            this.#queue.add(key);
          }
        }
        if (failed && !signal.aborted) await this.#pause(this.#backoff.next(), signal);
        else if (!failed) this.#backoff.reset();
      }
    } finally {
      signal.removeEventListener('abort', onAbort);
      if (this.#retryTimer) clearTimeout(this.#retryTimer);
    }
  }

  #pause(ms: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      this.#retryTimer = setTimeout(resolve, ms);
      this.#wake = () => {
        if (signal.aborted) {
          clearTimeout(this.#retryTimer);
          resolve();
        }
      };
    });
  }
}
