/**
 * When to renew and how long to wait after a failure — pure functions, so the schedule is tested
 * without timers. Istio's agent (secretcache rotateTime) renews at
 * `expiry - (ratio ± jitter) × lifetime`, lifetime measured from when the agent received the cert.
 */

/** Jitter offset in [-jitter, +jitter] from a uniform `random()` in [0, 1). */
export function jitterOffset(jitter: number, random: () => number): number {
  return (random() * 2 - 1) * jitter;
}

/** Milliseconds from `now` until renewal; 0 when it is already due. */
export function rotationDelayMs(createdAt: number, expiresAt: number, now: number, gracePeriodRatio: number, offset = 0): number {
  const lifetime = Math.max(0, expiresAt - createdAt);
  const ratio = Math.min(1, Math.max(0, gracePeriodRatio + offset));
  return Math.max(0, Math.round(expiresAt - ratio * lifetime - now));
}

/**
 * Exponential backoff with "equal jitter": attempt n (0-based) waits between half and all of
 * min(max, initial·2ⁿ), so a fleet that failed together does not retry together.
 */
export function backoffDelayMs(attempt: number, initialMs: number, maxMs: number, random: () => number): number {
  const cap = Math.min(maxMs, initialMs * 2 ** Math.min(attempt, 30));
  return Math.round(cap / 2 + (cap / 2) * random());
}

/** setTimeout's limit (2^31-1 ms ≈ 24.8 days): longer waits are taken in steps. */
export const MAX_TIMER_MS = 2 ** 31 - 1;
