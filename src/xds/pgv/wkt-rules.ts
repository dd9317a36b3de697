import type { Message } from '@bufbuild/protobuf';
import type { Any, Duration, Timestamp } from '@bufbuild/protobuf/wkt';
import { showValue } from './report.js';
import { checkBounds, setRuleFields, showList, type Bounds, type Comparable, type ValueCheck } from './rule-fields.js';

const NANOS = 1_000_000_000n;
/** google.protobuf.Duration's documented range: ±10000 years. */
const MAX_DURATION_SECONDS = 315_576_000_000n;
/** google.protobuf.Timestamp's range: 0001-01-01T00:00:00Z .. 9999-12-31T23:59:59Z. */
const MIN_TIMESTAMP_SECONDS = -62_135_596_800n;
const MAX_TIMESTAMP_SECONDS = 253_402_300_799n;

const toNanos = (d: { seconds: bigint; nanos: number }): bigint => d.seconds * NANOS + BigInt(d.nanos);

/** `1.5s`, `-0.000000001s`: protobuf JSON's duration form, from nanoseconds. */
export function showDurationNanos(n: Comparable): string {
  const v = BigInt(n);
  const sign = v < 0n ? '-' : '';
  const abs = v < 0n ? -v : v;
  const frac = (abs % NANOS).toString().padStart(9, '0').replace(/0+$/, '');
  return `${sign}${abs / NANOS}${frac ? `.${frac}` : ''}s`;
}

export function showTimestampNanos(n: Comparable): string {
  const v = BigInt(n);
  const ms = v / 1_000_000n;
  const date = new Date(Number(ms));
  return Number.isNaN(date.getTime()) ? `${v}ns since epoch` : date.toISOString();
}

function durationProblem(d: Duration): string | undefined {
  if (d.seconds > MAX_DURATION_SECONDS || d.seconds < -MAX_DURATION_SECONDS) return 'seconds out of range';
  if (d.nanos <= -1_000_000_000 || d.nanos >= 1_000_000_000) return 'nanos out of range';
  if ((d.seconds > 0n && d.nanos < 0) || (d.seconds < 0n && d.nanos > 0)) return 'seconds and nanos have different signs';
  return undefined;
}

function timestampProblem(t: Timestamp): string | undefined {
  if (t.seconds < MIN_TIMESTAMP_SECONDS || t.seconds > MAX_TIMESTAMP_SECONDS) return 'seconds out of range';
  if (t.nanos < 0 || t.nanos >= 1_000_000_000) return 'nanos out of range';
  return undefined;
}

function boundsOf(r: Map<string, unknown>): Bounds {
  const at = (k: string): Comparable | undefined => {
    const v = r.get(k) as Duration | Timestamp | undefined;
    return v ? toNanos(v) : undefined;
  };
  const b: { -readonly [K in keyof Bounds]: Comparable } = {};
  for (const k of ['lt', 'lte', 'gt', 'gte'] as const) {
    const v = at(k);
    if (v !== undefined) b[k] = v;
  }
  return b;
}

/** Whether this duration/timestamp/any rule set demands the field be set. */
export function requiresPresence(rules: Message): boolean {
  return setRuleFields(rules).get('required') === true;
}

/** const, lt/lte/gt/gte, in, not_in; only on a set Duration (`required` is checked by the caller). */
export function compileDurationRules(rules: Message): ValueCheck | undefined {
  const r = setRuleFields(rules);
  const constNanos = r.has('const') ? toNanos(r.get('const') as Duration) : undefined;
  const inList = ((r.get('in') as Duration[] | undefined) ?? []).map(toNanos);
  const notInList = ((r.get('not_in') as Duration[] | undefined) ?? []).map(toNanos);
  const inSet = inList.length ? new Set(inList) : undefined;
  const notInSet = notInList.length ? new Set(notInList) : undefined;
  const bounds = boundsOf(r);
  const hasBounds = Object.keys(bounds).length > 0;
  if (constNanos === undefined && !inSet && !notInSet && !hasBounds) return undefined;

  return (raw, path, run) => {
    const d = raw as Duration;
    const problem = durationProblem(d);
    if (problem) {
      run.report(path, 'duration.valid', `value is not a valid duration: ${problem} (seconds ${d.seconds}, nanos ${d.nanos})`);
      return;
    }
    const v = toNanos(d);
    const got = `, got ${showDurationNanos(v)}`;
    if (constNanos !== undefined && v !== constNanos)
      run.report(path, 'duration.const', `value must equal ${showDurationNanos(constNanos)}${got}`);
    if (inSet && !inSet.has(v)) run.report(path, 'duration.in', `value must be in list ${showList(inList, showDurationNanos)}${got}`);
    if (notInSet?.has(v)) run.report(path, 'duration.not_in', `value must not be in list ${showList(notInList, showDurationNanos)}${got}`);
    if (hasBounds) {
      const failure = checkBounds(v, bounds, showDurationNanos);
      if (failure) run.report(path, `duration.${failure.rule}`, `value ${failure.reason}${got}`);
    }
  };
}

/**
 * const, lt/lte/gt/gte, lt_now, gt_now, within, as PGV: lt_now/gt_now combine with within
 * ("before now, but at most `within` ago"), and within alone means |value − now| < within.
 */
export function compileTimestampRules(rules: Message): ValueCheck | undefined {
  const r = setRuleFields(rules);
  const constNanos = r.has('const') ? toNanos(r.get('const') as Timestamp) : undefined;
  const bounds = boundsOf(r);
  const hasBounds = Object.keys(bounds).length > 0;
  const ltNow = r.get('lt_now') === true;
  const gtNow = r.get('gt_now') === true;
  const within = r.has('within') ? toNanos(r.get('within') as Duration) : undefined;
  if (constNanos === undefined && !hasBounds && !ltNow && !gtNow && within === undefined) return undefined;

  return (raw, path, run) => {
    const t = raw as Timestamp;
    const problem = timestampProblem(t);
    if (problem) {
      run.report(path, 'timestamp.valid', `value is not a valid timestamp: ${problem} (seconds ${t.seconds}, nanos ${t.nanos})`);
      return;
    }
    const v = toNanos(t);
    const got = `, got ${showTimestampNanos(v)}`;
    if (constNanos !== undefined && v !== constNanos)
      run.report(path, 'timestamp.const', `value must equal ${showTimestampNanos(constNanos)}${got}`);
    if (hasBounds) {
      const failure = checkBounds(v, bounds, showTimestampNanos);
      if (failure) run.report(path, `timestamp.${failure.rule}`, `value ${failure.reason}${got}`);
      return; // PGV: explicit bounds take precedence over the *_now rules.
    }
    if (!ltNow && !gtNow && within === undefined) return;
    const now = run.now();
    const withinText = within !== undefined ? ` within ${showDurationNanos(within)}` : '';
    if (ltNow) {
      if (v >= now || (within !== undefined && v < now - within)) {
        run.report(path, 'timestamp.lt_now', `value must be before now${withinText}${got}`);
      }
    } else if (gtNow) {
      if (v <= now || (within !== undefined && v > now + within)) {
        run.report(path, 'timestamp.gt_now', `value must be after now${withinText}${got}`);
      }
    } else if (within !== undefined && (v >= now + within || v <= now - within)) {
      run.report(path, 'timestamp.within', `value must be${withinText} of now${got}`);
    }
  };
}

/** AnyRules in / not_in on the type URL (`required` is checked by the caller). */
export function compileAnyRules(rules: Message): ValueCheck | undefined {
  const r = setRuleFields(rules);
  const inList = (r.get('in') as string[] | undefined) ?? [];
  const notIn = (r.get('not_in') as string[] | undefined) ?? [];
  if (inList.length === 0 && notIn.length === 0) return undefined;
  const inSet = new Set(inList);
  const notInSet = new Set(notIn);
  return (raw, path, run) => {
    const url = (raw as Any).typeUrl;
    if (inList.length > 0 && !inSet.has(url))
      run.report(path, 'any.in', `type URL must be in list ${showList(inList)}, got ${showValue(url)}`);
    if (notInSet.has(url)) run.report(path, 'any.not_in', `type URL must not be in list ${showList(notIn)}, got ${showValue(url)}`);
  };
}
