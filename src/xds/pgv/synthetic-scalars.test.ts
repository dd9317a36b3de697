import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createRegistry, type DescMessage } from '@bufbuild/protobuf';
import { KnownRegex } from '../../gen/validate/validate_pb.js';
import { make, syntheticMessage, type FieldSpec, type ScalarName } from './test-schema.js';
import { validateMessage } from './validate.js';

const registry = createRegistry();
const broken = (desc: DescMessage, init: Record<string, unknown>): string[] =>
  validateMessage(desc, make(desc, init), registry).map((v) => `${v.path} ${v.rule}`);
const one = (field: Omit<FieldSpec, 'name'>): DescMessage => syntheticMessage([{ name: 'v', ...field }]);

const INT_KINDS: [ScalarName, (n: number) => number | bigint][] = [
  ['int32', Number],
  ['sint32', Number],
  ['sfixed32', Number],
  ['uint32', Number],
  ['fixed32', Number],
  ['int64', BigInt],
  ['sint64', BigInt],
  ['sfixed64', BigInt],
  ['uint64', BigInt],
  ['fixed64', BigInt],
  ['float', Number],
  ['double', Number],
];

for (const [kind, num] of INT_KINDS) {
  test(`${kind}: const, in, not_in, gt/lt, ignore_empty`, () => {
    const c = one({ type: kind, rules: { type: { case: kind, value: { const: num(5) } } } as never });
    assert.deepEqual(broken(c, { v: num(5) }), []);
    assert.deepEqual(broken(c, { v: num(6) }), [`v ${kind}.const`]);
    // No ignore_empty: the proto3 default 0 is checked.
    assert.deepEqual(broken(c, {}), [`v ${kind}.const`]);

    const list = one({ type: kind, rules: { type: { case: kind, value: { in: [num(1), num(2)], notIn: [num(2)] } } } as never });
    assert.deepEqual(broken(list, { v: num(1) }), []);
    assert.deepEqual(broken(list, { v: num(2) }), [`v ${kind}.not_in`]);
    assert.deepEqual(broken(list, { v: num(3) }), [`v ${kind}.in`]);

    const range = one({ type: kind, rules: { type: { case: kind, value: { gt: num(1), lt: num(10), ignoreEmpty: true } } } as never });
    assert.deepEqual(broken(range, { v: num(0) }), [], 'ignore_empty skips the zero value');
    assert.deepEqual(broken(range, { v: num(1) }), [`v ${kind}.gt`]);
    assert.deepEqual(broken(range, { v: num(9) }), []);
    assert.deepEqual(broken(range, { v: num(10) }), [`v ${kind}.lt`]);
  });
}

test('numeric ranges: all four inclusive/exclusive bound pairs, inside and (lt < gt) outside', () => {
  const r = (value: Record<string, number>) => one({ type: 'int32', rules: { type: { case: 'int32', value } } });
  const passes = (desc: DescMessage, v: number) => broken(desc, { v }).length === 0;
  const inside = r({ gte: 2, lte: 4 });
  assert.deepEqual(
    [1, 2, 4, 5].map((v) => passes(inside, v)),
    [false, true, true, false],
  );
  assert.deepEqual(broken(inside, { v: 5 }), ['v int32.lte']);
  const halfOpen = r({ gt: 2, lte: 4 });
  assert.deepEqual(
    [2, 3, 4, 5].map((v) => passes(halfOpen, v)),
    [false, true, true, false],
  );
  // Exclusive: lt < gt means "outside [lt, gt]".
  const outsideClosed = r({ lt: 2, gt: 4 });
  assert.deepEqual(
    [1, 2, 3, 4, 5].map((v) => passes(outsideClosed, v)),
    [true, false, false, false, true],
  );
  assert.deepEqual(broken(outsideClosed, { v: 3 }), ['v int32.lt_gt']);
  const outsideOpen = r({ lte: 2, gte: 4 });
  assert.deepEqual(
    [2, 3, 4].map((v) => passes(outsideOpen, v)),
    [true, false, true],
  );
  const ltGte = r({ lt: 2, gte: 4 });
  assert.deepEqual(
    [1, 2, 3, 4].map((v) => passes(ltGte, v)),
    [true, false, false, true],
  );
  const lteGt = r({ lte: 2, gt: 4 });
  assert.deepEqual(
    [2, 3, 4, 5].map((v) => passes(lteGt, v)),
    [true, false, false, true],
  );
  const msg = validateMessage(outsideClosed, make(outsideClosed, { v: 3 }), registry)[0]!.message;
  assert.match(msg, /outside range \[2, 4\], got 3/);
});

test('64-bit comparisons stay exact beyond 2^53', () => {
  const big = one({ type: 'uint64', rules: { type: { case: 'uint64', value: { lte: 9007199254740993n } } } });
  assert.deepEqual(broken(big, { v: 9007199254740993n }), []);
  assert.deepEqual(broken(big, { v: 9007199254740994n }), ['v uint64.lte']);
});

test('proto3 optional scalars are checked only when set', () => {
  const opt = one({ type: 'uint32', optional: true, rules: { type: { case: 'uint32', value: { gt: 0 } } } });
  assert.deepEqual(broken(opt, {}), []);
  assert.deepEqual(broken(opt, { v: 0 }), ['v uint32.gt']);
});

test('bool const and enum const / in / not_in / defined_only', () => {
  const b = one({ type: 'bool', rules: { type: { case: 'bool', value: { const: false } } } });
  assert.deepEqual(broken(b, { v: true }), ['v bool.const']);
  assert.deepEqual(broken(b, {}), []);
  const e = one({ type: '.pgvtest.Color', rules: { type: { case: 'enum', value: { const: 1 } } } });
  assert.deepEqual(broken(e, { v: 2 }), ['v enum.const']);
  const list = one({ type: '.pgvtest.Color', rules: { type: { case: 'enum', value: { in: [1, 2], notIn: [2], definedOnly: true } } } });
  assert.deepEqual(broken(list, { v: 1 }), []);
  assert.deepEqual(broken(list, { v: 2 }), ['v enum.not_in']);
  assert.deepEqual(broken(list, { v: 7 }), ['v enum.defined_only', 'v enum.in']);
  const msg = validateMessage(list, make(list, { v: 2 }), registry)[0]!.message;
  assert.match(msg, /not be in list \[GREEN \(2\)\], got GREEN \(2\)/);
});

const str = (value: Record<string, unknown>) => one({ type: 'string', rules: { type: { case: 'string', value } } as never });

test('string const, in, not_in, len, min/max_len (code points), len/min/max_bytes', () => {
  assert.deepEqual(broken(str({ const: 'a' }), { v: 'b' }), ['v string.const']);
  assert.deepEqual(broken(str({ in: ['a', 'b'] }), { v: 'c' }), ['v string.in']);
  assert.deepEqual(broken(str({ notIn: ['a'] }), { v: 'a' }), ['v string.not_in']);
  assert.deepEqual(broken(str({ len: 3n }), { v: 'héé' }), [], 'three code points, five bytes');
  assert.deepEqual(broken(str({ len: 3n }), { v: 'ab' }), ['v string.len']);
  assert.deepEqual(broken(str({ maxLen: 2n }), { v: '😀😀' }), [], 'astral characters count once');
  assert.deepEqual(broken(str({ maxLen: 2n }), { v: 'abc' }), ['v string.max_len']);
  assert.deepEqual(broken(str({ lenBytes: 2n }), { v: 'é' }), []);
  assert.deepEqual(broken(str({ lenBytes: 2n }), { v: 'e' }), ['v string.len_bytes']);
  assert.deepEqual(broken(str({ minBytes: 2n, maxBytes: 3n }), { v: 'abcd' }), ['v string.max_bytes']);
  assert.deepEqual(broken(str({ minBytes: 2n, maxBytes: 3n }), { v: 'a' }), ['v string.min_bytes']);
});

test('string prefix, suffix, contains, not_contains, pattern (full RE2 match), ignore_empty', () => {
  assert.deepEqual(broken(str({ prefix: 'outbound|' }), { v: 'inbound|80||' }), ['v string.prefix']);
  assert.deepEqual(broken(str({ suffix: '.local' }), { v: 'a.local' }), []);
  assert.deepEqual(broken(str({ suffix: '.local' }), { v: 'a.localx' }), ['v string.suffix']);
  assert.deepEqual(broken(str({ contains: '|' }), { v: 'abc' }), ['v string.contains']);
  assert.deepEqual(broken(str({ notContains: '|' }), { v: 'a|b' }), ['v string.not_contains']);
  assert.deepEqual(broken(str({ pattern: '[a-z]+' }), { v: 'abc' }), []);
  assert.deepEqual(broken(str({ pattern: '[a-z]+' }), { v: 'abc1' }), ['v string.pattern']);
  assert.deepEqual(broken(str({ minLen: 3n, ignoreEmpty: true }), { v: '' }), []);
  assert.deepEqual(broken(str({ minLen: 3n, ignoreEmpty: true }), { v: 'ab' }), ['v string.min_len']);
  assert.throws(() => broken(str({ pattern: '(?=lookahead)' }), { v: 'x' }), /pgvtest\.M\.v: validate pattern .* is not RE2/);
});

test('string well-known formats', () => {
  const wk = (c: string, v: string) => broken(str({ wellKnown: { case: c, value: true } }), { v });
  assert.deepEqual(wk('hostname', 'reviews.default.svc.cluster.local'), []);
  assert.deepEqual(wk('hostname', 'Reviews-1.example.'), [], 'one trailing dot and upper case are fine');
  assert.deepEqual(wk('hostname', '-bad.example'), ['v string.hostname']);
  assert.deepEqual(wk('hostname', 'a..b'), ['v string.hostname']);
  assert.deepEqual(wk('hostname', `${'a'.repeat(64)}.com`), ['v string.hostname']);
  assert.deepEqual(wk('hostname', 'under_score.com'), ['v string.hostname']);
  assert.deepEqual(wk('ip', '10.0.0.1'), []);
  assert.deepEqual(wk('ip', '::1'), []);
  assert.deepEqual(wk('ip', '10.0.0.256'), ['v string.ip']);
  assert.deepEqual(wk('ipv4', '::1'), ['v string.ipv4']);
  assert.deepEqual(wk('ipv4', '010.0.0.1'), ['v string.ipv4']);
  assert.deepEqual(wk('ipv6', 'fe80::1'), []);
  assert.deepEqual(wk('ipv6', 'fe80::1%eth0'), ['v string.ipv6']);
  assert.deepEqual(wk('ipv6', '[::1]'), ['v string.ipv6']);
  assert.deepEqual(wk('address', 'example.com'), []);
  assert.deepEqual(wk('address', '2001:db8::1'), []);
  assert.deepEqual(wk('address', 'not an address'), ['v string.address']);
  assert.deepEqual(wk('email', 'ops@example.com'), []);
  assert.deepEqual(wk('email', 'Ops Team <ops@example.com>'), []);
  assert.deepEqual(wk('email', 'ops.example.com'), ['v string.email']);
  assert.deepEqual(wk('email', 'ops@-example.com'), ['v string.email']);
  assert.deepEqual(wk('uri', 'https://example.com/a?b=c#d'), []);
  assert.deepEqual(wk('uri', '/relative/path'), ['v string.uri']);
  assert.deepEqual(wk('uri', 'https://exa mple.com'), ['v string.uri']);
  assert.deepEqual(wk('uriRef', '/relative/path?x=%20'), []);
  assert.deepEqual(wk('uriRef', 'bad%zz'), ['v string.uri_ref']);
  assert.deepEqual(wk('uriRef', 'a:b/c'), [], 'a scheme');
  assert.deepEqual(wk('uuid', '123e4567-e89b-12d3-a456-426614174000'), []);
  assert.deepEqual(wk('uuid', '123e4567e89b12d3a456426614174000'), ['v string.uuid']);
  // A well-known flag set to false is no rule.
  assert.deepEqual(broken(str({ wellKnown: { case: 'hostname', value: false } }), { v: '-' }), []);
});

test('well_known_regex: HTTP_HEADER_NAME strict by default, HTTP_HEADER_VALUE, strict: false', () => {
  const name = str({ wellKnown: { case: 'wellKnownRegex', value: KnownRegex.HTTP_HEADER_NAME } });
  assert.deepEqual(broken(name, { v: 'x-request-id' }), []);
  assert.deepEqual(broken(name, { v: ':path' }), []);
  assert.deepEqual(broken(name, { v: 'x y' }), ['v string.well_known_regex']);
  assert.deepEqual(broken(name, { v: '' }), ['v string.well_known_regex'], 'a strict header name is never empty');
  const value = str({ wellKnown: { case: 'wellKnownRegex', value: KnownRegex.HTTP_HEADER_VALUE } });
  assert.deepEqual(broken(value, { v: 'a b\tc' }), []);
  assert.deepEqual(broken(value, { v: 'a\u007f' }), ['v string.well_known_regex']);
  const loose = str({ wellKnown: { case: 'wellKnownRegex', value: KnownRegex.HTTP_HEADER_NAME }, strict: false });
  assert.deepEqual(broken(loose, { v: 'x y' }), []);
  assert.deepEqual(broken(loose, { v: 'x\u0000y' }), ['v string.well_known_regex']);
});

const bytes = (value: Record<string, unknown>) => one({ type: 'bytes', rules: { type: { case: 'bytes', value } } as never });
const b = (...n: number[]) => new Uint8Array(n);

test('bytes const, in, not_in, len, min/max_len, prefix, suffix, contains, pattern, ip/ipv4/ipv6, ignore_empty', () => {
  assert.deepEqual(broken(bytes({ const: b(1, 2) }), { v: b(1, 2) }), []);
  assert.deepEqual(broken(bytes({ const: b(1, 2) }), { v: b(1) }), ['v bytes.const']);
  assert.deepEqual(broken(bytes({ in: [b(1)], notIn: [b(2)] }), { v: b(2) }), ['v bytes.in', 'v bytes.not_in']);
  assert.deepEqual(broken(bytes({ len: 2n }), { v: b(1) }), ['v bytes.len']);
  assert.deepEqual(broken(bytes({ minLen: 2n, maxLen: 3n }), { v: b(1, 2, 3, 4) }), ['v bytes.max_len']);
  assert.deepEqual(broken(bytes({ prefix: b(9) }), { v: b(1, 9) }), ['v bytes.prefix']);
  assert.deepEqual(broken(bytes({ suffix: b(9) }), { v: b(1, 9) }), []);
  assert.deepEqual(broken(bytes({ suffix: b(1, 2, 3) }), { v: b(2, 3) }), ['v bytes.suffix']);
  assert.deepEqual(broken(bytes({ contains: b(2, 3) }), { v: b(1, 2, 3, 4) }), []);
  assert.deepEqual(broken(bytes({ contains: b(3, 2) }), { v: b(1, 2, 3, 4) }), ['v bytes.contains']);
  assert.deepEqual(broken(bytes({ pattern: '^ab+$' }), { v: new TextEncoder().encode('abbb') }), []);
  assert.deepEqual(broken(bytes({ pattern: '^ab+$' }), { v: new TextEncoder().encode('ac') }), ['v bytes.pattern']);
  assert.deepEqual(broken(bytes({ wellKnown: { case: 'ip', value: true } }), { v: b(10, 0, 0, 1) }), []);
  assert.deepEqual(broken(bytes({ wellKnown: { case: 'ip', value: true } }), { v: b(10, 0, 1) }), ['v bytes.ip']);
  assert.deepEqual(broken(bytes({ wellKnown: { case: 'ipv4', value: true } }), { v: new Uint8Array(16) }), ['v bytes.ipv4']);
  assert.deepEqual(broken(bytes({ wellKnown: { case: 'ipv6', value: true } }), { v: b(10, 0, 0, 1) }), ['v bytes.ipv6']);
  assert.deepEqual(broken(bytes({ minLen: 1n, ignoreEmpty: true }), { v: b() }), []);
  assert.deepEqual(broken(bytes({ minLen: 1n }), { v: b() }), ['v bytes.min_len']);
});

test('a rule of the wrong type for its field is a descriptor error naming the field', () => {
  const wrong = one({ type: 'int32', rules: { type: { case: 'string', value: { minLen: 1n } } } });
  assert.throws(() => broken(wrong, {}), /pgvtest\.M\.v: \(validate\.rules\)\.string on a field of type int32/);
});
