import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import {
  formatGoDuration,
  formatGoDurationMs,
  parseDurationMs,
  parseGoDuration,
  parseGoDurationMs,
  protoDurationJson,
} from './duration.js';

/** Go's own answers (testdata/duration/reference.go). */
const REFERENCE = JSON.parse(readFileSync(path.resolve(import.meta.dirname, '../../testdata/duration/go-reference.json'), 'utf8')) as {
  parse: { in: string; nanos: string | null }[];
  format: { nanos: string; out: string }[];
};

/** The parsers this module replaced: what they accepted must still be accepted, with the same value. */
const OLD = {
  /** The former flag/environment parser (ms; bare numbers; no sign). */
  flagMs(text: string): number | undefined {
    const units: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
    const t = text.trim();
    if (/^\d+(?:\.\d+)?$/.test(t)) return Number(t);
    const part = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/y;
    let total = 0;
    let pos = 0;
    while (pos < t.length) {
      part.lastIndex = pos;
      const m = part.exec(t);
      if (!m) break;
      total += Number(m[1]) * (units[m[2] ?? ''] ?? 0);
      pos = part.lastIndex;
    }
    return t.length === 0 || pos !== t.length ? undefined : total;
  },
  /** The former istioctl-flag parser (ms; ms, s, m, h only). */
  istioctlMs(text: string): number | undefined {
    const units: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
    const re = /(\d+(?:\.\d+)?)(ms|s|m|h)/gy;
    let total = 0;
    let end = 0;
    for (let m = re.exec(text); m; m = re.exec(text)) {
      total += Number(m[1]) * (units[m[2] ?? ''] ?? 0);
      end = re.lastIndex;
    }
    return text !== '' && end === text.length ? total : undefined;
  },
};

/** Go's range: ±2^63-1 ns (about 292 years); the former parsers had none. */
const IN_RANGE_MS = 9_223_372_036_854;

const close = (a: number, b: number): boolean => Math.abs(a - b) <= 1e-6 * Math.max(1, Math.abs(b));

describe('parseGoDuration', () => {
  it('reads what Go reads, as Go does', () => {
    assert.ok(REFERENCE.parse.length > 500);
    for (const c of REFERENCE.parse)
      assert.equal(parseGoDuration(c.in), c.nanos === null ? undefined : BigInt(c.nanos), JSON.stringify(c.in));
  });

  it('examples', () => {
    const cases: [string, bigint | undefined][] = [
      ['0', 0n],
      ['5s', 5_000_000_000n],
      ['30ms', 30_000_000n],
      ['3m', 180_000_000_000n],
      ['1h30m', 5_400_000_000_000n],
      ['1.5s', 1_500_000_000n],
      ['.5s', 500_000_000n],
      ['100us', 100_000n],
      ['100µs', 100_000n],
      ['-2s', -2_000_000_000n],
      ['0.000000001s', 1n],
      ['', undefined],
      ['5', undefined],
      ['5x', undefined],
      ['s', undefined],
      ['1s ', undefined],
      ['9999999999h', undefined],
    ];
    for (const [text, nanos] of cases) assert.equal(parseGoDuration(text), nanos, text);
  });
});

describe('parseDurationMs', () => {
  it('reads Go durations, compound ones included; a bare number is ms', () => {
    assert.equal(parseDurationMs('100ms', 'x'), 100);
    assert.equal(parseDurationMs('10s', 'x'), 10_000);
    assert.equal(parseDurationMs('30m0s', 'x'), 1_800_000);
    assert.equal(parseDurationMs('1m30s', 'x'), 90_000);
    assert.equal(parseDurationMs('1.5h', 'x'), 5_400_000);
    assert.equal(parseDurationMs('250', 'x'), 250);
    assert.equal(parseDurationMs(' 2s ', 'x'), 2000);
    assert.equal(parseDurationMs('1500us', 'x'), 1.5);
    for (const bad of ['', 'abc', '10 s', '5d', 's', '1m30']) assert.throws(() => parseDurationMs(bad, '--f'), /--f: .* is not a duration/);
    assert.throws(() => parseDurationMs('-1s', '--f'), /--f: "-1s" is not a duration: it must not be negative/);
  });

  it("accepts everything the former parser did in Go's range, with the same value, and what Go accepts (not negative)", () => {
    const inputs = [...REFERENCE.parse.map((c) => c.in), '250', '1.5', ' 10s', '1m30'];
    for (const text of inputs) {
      const old = OLD.flagMs(text);
      let now: number | undefined;
      try {
        now = parseDurationMs(text, 'x');
      } catch {
        now = undefined;
      }
      if (old !== undefined && old <= IN_RANGE_MS)
        assert.ok(now !== undefined && close(now, old), `${JSON.stringify(text)}: ${old} → ${now}`);
      const go = parseGoDuration(text.trim());
      if (go !== undefined && go >= 0n) assert.ok(now !== undefined, JSON.stringify(text));
    }
  });
});

describe('parseGoDurationMs', () => {
  it("accepts everything the former istioctl-flag parser did in Go's range, with the same value; no bare numbers, nothing negative", () => {
    for (const { in: text } of REFERENCE.parse) {
      const old = OLD.istioctlMs(text);
      const now = parseGoDurationMs(text);
      if (old !== undefined && old <= IN_RANGE_MS)
        assert.ok(now !== undefined && close(now, old), `${JSON.stringify(text)}: ${old} → ${now}`);
    }
    assert.equal(parseGoDurationMs('5m0s'), 300_000);
    assert.equal(parseGoDurationMs('5'), undefined);
    assert.equal(parseGoDurationMs('-5s'), undefined);
  });
});

describe('formatGoDuration', () => {
  it('prints as Go prints', () => {
    assert.ok(REFERENCE.format.length > 100);
    for (const c of REFERENCE.format) assert.equal(formatGoDuration(BigInt(c.nanos)), c.out, c.nanos);
  });

  it('milliseconds', () => {
    assert.equal(formatGoDurationMs(0), '0s');
    assert.equal(formatGoDurationMs(500), '500ms');
    assert.equal(formatGoDurationMs(1500), '1.5s');
    assert.equal(formatGoDurationMs(90_000), '1m30s');
    assert.equal(formatGoDurationMs(300_000), '5m0s');
    assert.equal(formatGoDurationMs(86_400_000), '24h0m0s');
    assert.equal(formatGoDurationMs(-1500), '-1.5s');
    assert.equal(formatGoDurationMs(0.5), '500µs');
  });
});

it('protoDurationJson: protobuf JSON form, seconds with 0, 3, 6 or 9 digits', () => {
  assert.equal(protoDurationJson(0n), '0s');
  assert.equal(protoDurationJson(180_000_000_000n), '180s');
  assert.equal(protoDurationJson(30_000_000n), '0.030s');
  assert.equal(protoDurationJson(1_000_100_000n), '1.000100s');
  assert.equal(protoDurationJson(1n), '0.000000001s');
  assert.equal(protoDurationJson(-1_500_000_000n), '-1.500s');
});
