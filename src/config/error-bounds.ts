/**
 * Bounds on what a rejected object may leave behind. A config error is kept for as long as its
 * file or object stays broken (debug endpoints, the startup summary) and is logged once; without
 * bounds a hostile file buys unbounded memory: a 5 MB host quoted in a message, 20,000
 * out-of-range ports each with an error, a 1 MB name repeated in every error of its object.
 *
 * Strings are also copied, not sliced: V8 represents a substring (and a template literal around
 * one) as a view of its parent, so a 40-character name read from a file keeps the whole file's
 * text alive for as long as the error lives.
 */
import { createHash } from 'node:crypto';
import type { ConfigError, ConfigOrigin } from './config.js';

export interface ErrorBounds {
  /** Errors kept per file (file source) or per object (Kubernetes source); the rest become one summary error. */
  readonly maxErrorsPerUnit: number;
  /** Errors kept per source in the store; the rest become one summary error. */
  readonly maxErrorsPerSource: number;
  /** Longest message kept, in characters. */
  readonly maxMessageChars: number;
  /** Longest kind, namespace, name, field path or file name kept, in characters. */
  readonly maxFieldChars: number;
}

export const ERROR_BOUNDS: ErrorBounds = Object.freeze({
  maxErrorsPerUnit: 20,
  maxErrorsPerSource: 2_000,
  maxMessageChars: 1_024,
  maxFieldChars: 512,
});

/**
 * A copy of `s` that references no other string, cut to `max` characters with the count of what
 * was cut. The UTF-8 round trip forces a flat copy (a cut surrogate pair becomes U+FFFD).
 */
export function boundedString(s: string, max: number): string {
  const cut = s.length > max ? `${s.slice(0, max)}…(${s.length - max} more characters)` : s;
  return Buffer.from(cut, 'utf8').toString('utf8');
}

function boundedOrigin(o: ConfigOrigin, b: ErrorBounds): ConfigOrigin {
  const file = boundedString(o.file, b.maxFieldChars);
  return o.line !== undefined ? { file, line: o.line } : { file };
}

/** One error with every string bounded and copied. */
export function boundedError(e: ConfigError, b: ErrorBounds = ERROR_BOUNDS): ConfigError {
  const out: { -readonly [K in keyof ConfigError]: ConfigError[K] } = {
    origin: boundedOrigin(e.origin, b),
    message: boundedString(e.message, b.maxMessageChars),
  };
  if (e.kind !== undefined) out.kind = boundedString(e.kind, b.maxFieldChars);
  if (e.namespace !== undefined) out.namespace = boundedString(e.namespace, b.maxFieldChars);
  if (e.name !== undefined) out.name = boundedString(e.name, b.maxFieldChars);
  if (e.path !== undefined) out.path = boundedString(e.path, b.maxFieldChars);
  return out;
}

/**
 * The first `max` errors, bounded, and when there were more, one more error saying how many were
 * left out (at the origin of the first one left out): a reader fixes the first ones and sees the rest.
 */
export function boundedErrors(errors: readonly ConfigError[], max: number, b: ErrorBounds = ERROR_BOUNDS): ConfigError[] {
  const kept = errors.slice(0, max).map((e) => boundedError(e, b));
  const first = errors[max];
  if (first) {
    kept.push({
      origin: boundedOrigin(first.origin, b),
      message: `${errors.length - max} more errors not shown (only the first ${max} are kept)`,
    });
  }
  return kept;
}

/**
 * A digest of an error set, so a source can skip re-reporting an unchanged set without keeping a
 * second copy of it (as JSON text, that copy was as large as the errors themselves).
 */
export function errorsDigest(errors: readonly ConfigError[]): string {
  return createHash('sha256').update(JSON.stringify(errors)).digest('base64');
}
