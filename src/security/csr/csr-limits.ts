/**
 * Limits at the CA's edge (istiod has none beyond gRPC's 4 MiB message size): a CSR larger than
 * any real one is refused before authentication or parsing, and each identity gets a token bucket
 * so one workload (or a stolen token) cannot keep the signer busy for everyone else.
 */

/**
 * Largest CSR accepted, in bytes of PEM. An RSA-4096 CSR with a few SANs is under 2 KiB; 32 KiB
 * leaves room for long SAN lists without letting a caller make us parse megabytes.
 */
export const DEFAULT_MAX_CSR_BYTES = 32 * 1024;

/**
 * CSRs per identity per minute (also the burst). An identity is a service account, shared by every
 * replica of a Deployment: a rolling restart of a few hundred pods must still pass.
 */
export const DEFAULT_CSR_PER_IDENTITY_PER_MINUTE = 600;

export interface CsrLimits {
  readonly maxCsrBytes: number;
  /** 0 turns the rate limit off. */
  readonly perIdentityPerMinute: number;
}

export const DEFAULT_CSR_LIMITS: CsrLimits = {
  maxCsrBytes: DEFAULT_MAX_CSR_BYTES,
  perIdentityPerMinute: DEFAULT_CSR_PER_IDENTITY_PER_MINUTE,
};

/** Why a CSR of `bytes` is refused, or undefined. */
export function csrSizeRefusal(bytes: number, limits: CsrLimits): string | undefined {
  return bytes > limits.maxCsrBytes ? `the CSR is ${bytes} bytes; the limit is ${limits.maxCsrBytes} bytes` : undefined;
}

interface Bucket {
  tokens: number;
  at: number;
}

/** Buckets kept before full (idle) ones are dropped. */
const PRUNE_AT = 10_000;

/**
 * One token bucket per key: capacity `perMinute`, refilled continuously at perMinute/60 s. Time
 * comes from the caller (ms), so tests need no clock.
 */
export class PerIdentityRateLimiter {
  private readonly buckets = new Map<string, Bucket>();
  private readonly perMs: number;

  constructor(private readonly perMinute: number) {
    this.perMs = perMinute / 60_000;
  }

  /** Takes one token for `key`; returns undefined when allowed, else the ms until the next token. */
  take(key: string, now: number): number | undefined {
    if (this.perMinute <= 0) return undefined;
    const b = this.buckets.get(key) ?? { tokens: this.perMinute, at: now };
    b.tokens = Math.min(this.perMinute, b.tokens + (now - b.at) * this.perMs);
    b.at = now;
    if (!this.buckets.has(key)) {
      if (this.buckets.size >= PRUNE_AT) this.prune(now);
      this.buckets.set(key, b);
    }
    if (b.tokens < 1) return Math.ceil((1 - b.tokens) / this.perMs);
    b.tokens -= 1;
    return undefined;
  }

  /** Buckets currently tracked (bounded: full ones are dropped when the map grows). */
  get size(): number {
    return this.buckets.size;
  }

  private prune(now: number): void {
    for (const [k, b] of this.buckets) if (b.tokens + (now - b.at) * this.perMs >= this.perMinute) this.buckets.delete(k);
  }
}
