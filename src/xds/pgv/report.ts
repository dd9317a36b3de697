import type { Registry } from '@bufbuild/protobuf';

/** One broken protoc-gen-validate rule: where (proto field path), which rule, and why. */
export interface PgvViolation {
  /** e.g. `filter_chains[0].filters[1].typed_config(envoy....HttpConnectionManager).stat_prefix` */
  readonly path: string;
  /** The validate.proto rule, e.g. `string.min_len`, `message.required`, `oneof.required`. */
  readonly rule: string;
  /** Human readable, with the offending value (truncated). */
  readonly message: string;
}

/**
 * A field path as a linked list of segments, so building paths costs nothing until a violation
 * needs one printed. `field` segments get a `.` before them unless first; `[i]`, `["key"]` and
 * `(type.Name)` attach directly.
 */
export interface PathSegment {
  readonly parent: PathSegment | undefined;
  readonly text: string;
  readonly isField: boolean;
}
export type Path = PathSegment | undefined;

export function fieldPath(parent: Path, name: string): PathSegment {
  return { parent, text: name, isField: true };
}

export function suffixPath(parent: Path, text: string): PathSegment {
  return { parent, text, isField: false };
}

export function pathToString(path: Path): string {
  const parts: PathSegment[] = [];
  for (let p = path; p; p = p.parent) parts.push(p);
  let out = '';
  for (let i = parts.length - 1; i >= 0; i--) {
    const seg = parts[i]!;
    out += seg.isField && out !== '' ? `.${seg.text}` : seg.text;
  }
  return out;
}

/** Options of one validation run. */
export interface ValidateOptions {
  /** Clock for timestamp lt_now / gt_now / within (tests pin it). Defaults to Date.now. */
  readonly now?: () => Date;
}

/** Mutable state of one validation run: where violations go, and what Any can be unpacked with. */
export class ValidationRun {
  readonly violations: PgvViolation[] = [];
  private nowNanos: bigint | undefined;
  private messagePrefix = '';

  constructor(
    readonly registry: Registry,
    private readonly options: ValidateOptions,
  ) {}

  report(path: Path, rule: string, message: string): void {
    this.violations.push({ path: pathToString(path), rule, message: this.messagePrefix + message });
  }

  /** Runs `fn` with every message it reports prefixed (map keys say so: `map key: …`). */
  withMessagePrefix(prefix: string, fn: () => void): void {
    const saved = this.messagePrefix;
    this.messagePrefix = saved + prefix;
    try {
      fn();
    } finally {
      this.messagePrefix = saved;
    }
  }

  /** "Now" in Unix nanoseconds, read once per run so every timestamp rule sees the same instant. */
  now(): bigint {
    if (this.nowNanos === undefined) {
      const date = this.options.now ? this.options.now() : new Date();
      this.nowNanos = BigInt(date.getTime()) * 1_000_000n;
    }
    return this.nowNanos;
  }
}

const MAX_SHOWN = 80;

/** An offending value for a message: strings quoted, long ones cut with `…`. */
export function showValue(value: unknown): string {
  if (typeof value === 'string') return truncate(JSON.stringify(value));
  if (typeof value === 'bigint') return value.toString();
  if (value instanceof Uint8Array) {
    const hex = Buffer.from(value.subarray(0, MAX_SHOWN / 2)).toString('hex');
    return `0x${hex}${value.length > MAX_SHOWN / 2 ? '…' : ''} (${value.length} bytes)`;
  }
  if (value === undefined) return 'unset';
  return truncate(String(value));
}

function truncate(s: string): string {
  return s.length > MAX_SHOWN ? `${s.slice(0, MAX_SHOWN - 1)}…` : s;
}
