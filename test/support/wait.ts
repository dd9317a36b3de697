export interface WaitOptions {
  /** Give up after this long (default 10 s). */
  timeoutMs?: number;
  /** Pause between polls (default 50 ms). */
  intervalMs?: number;
  /** Named in the timeout error. */
  description?: string;
  /** Stops polling (rejects with the signal's reason). */
  signal?: AbortSignal;
}

export type Falsy = false | 0 | '' | null | undefined;

const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Polls `cond` until it returns a truthy value (which is returned), or throws after `timeoutMs`.
 * A `cond` that throws counts as "not yet"; its last error is reported on timeout.
 */
export async function waitFor<T>(cond: () => T | Falsy | Promise<T | Falsy>, opts: WaitOptions = {}): Promise<T> {
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const intervalMs = opts.intervalMs ?? 50;
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  let lastValue: unknown;
  for (;;) {
    opts.signal?.throwIfAborted();
    try {
      const v = await cond();
      if (v) return v;
      lastValue = v;
      lastError = undefined;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() >= deadline) {
      const what = opts.description ?? 'condition';
      const why = lastError !== undefined ? `; last error: ${describe(lastError)}` : `; last value: ${JSON.stringify(lastValue)}`;
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${why}`, { cause: lastError });
    }
    await pause(intervalMs);
  }
}

/**
 * Waits a fixed window. Only for asserting that something does NOT happen (check afterwards that
 * nothing arrived); never use it to wait for something to happen — use waitFor.
 */
export function quietWindow(ms: number): Promise<void> {
  return pause(ms);
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
