export type TimerHandle = unknown;

/** Time source and timers, injected so tests can run timing logic (debounce, renewals, drains) on a fake clock. */
export interface Clock {
  /** Milliseconds; only differences matter. */
  now(): number;
  setTimeout(fn: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
}

/** Monotonic wall-aligned milliseconds and Node's timers. */
export const realClock: Clock = {
  now: () => performance.timeOrigin + performance.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (h) => clearTimeout(h as ReturnType<typeof setTimeout>),
};
