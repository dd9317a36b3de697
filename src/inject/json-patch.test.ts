import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { createJsonPatch, escapePointerToken } from './json-patch.js';
import type { JsonValue } from '../util/json-patch.js';
import { applyJsonPatch } from './test-support.js';

describe('createJsonPatch', () => {
  it('escapes ~ and / in member names (annotation keys)', () => {
    assert.equal(escapePointerToken('sidecar.istio.io/status'), 'sidecar.istio.io~1status');
    assert.equal(escapePointerToken('a~b/c'), 'a~0b~1c');
    const ops = createJsonPatch({ metadata: { annotations: { a: '1' } } }, { metadata: { annotations: { a: '1', 'x/y': '2' } } });
    assert.deepEqual(ops, [{ op: 'add', path: '/metadata/annotations/x~1y', value: '2' }]);
  });

  it('appends containers with add at the end and edits in place', () => {
    const from: JsonValue = { spec: { containers: [{ name: 'app', image: 'a' }] } };
    const to: JsonValue = { spec: { containers: [{ name: 'app', image: 'b' }, { name: 'istio-proxy' }] } };
    const ops = createJsonPatch(from, to);
    assert.deepEqual(ops, [
      { op: 'replace', path: '/spec/containers/0/image', value: 'b' },
      { op: 'add', path: '/spec/containers/1', value: { name: 'istio-proxy' } },
    ]);
    assert.deepEqual(applyJsonPatch(from, ops), to);
  });

  it('inserts before a common suffix and removes from the middle', () => {
    const cases: [JsonValue, JsonValue][] = [
      [
        [1, 2, 3],
        [0, 1, 2, 3],
      ],
      [
        [1, 2, 3],
        [1, 9, 8, 2, 3],
      ],
      [
        [1, 2, 3, 4],
        [1, 4],
      ],
      [[], [1]],
      [[1], []],
      [{ a: [1, { b: 2 }] }, { a: [{ b: 3 }] }],
    ];
    for (const [from, to] of cases) assert.deepEqual(applyJsonPatch(from, createJsonPatch(from, to)), to, JSON.stringify([from, to]));
  });

  it('is empty for equal documents and replaces across types', () => {
    assert.deepEqual(createJsonPatch({ a: [1, { b: null }] }, { a: [1, { b: null }] }), []);
    assert.deepEqual(createJsonPatch({ a: [1] }, { a: { 0: 1 } }), [{ op: 'replace', path: '/a', value: { 0: 1 } }]);
  });

  it('turns any document into any other (property)', () => {
    const json = fc.letrec((tie) => ({
      value: fc.oneof(
        { depthSize: 'small', withCrossShrink: true },
        fc.constantFrom<JsonValue>(null, true, false, 0, 1, 'a', 'b/c', '~'),
        fc.array(tie('value'), { maxLength: 5 }),
        fc.dictionary(fc.constantFrom('a', 'b', 'c/d', 'e~f', 'name'), tie('value'), { maxKeys: 4, noNullPrototype: true }),
      ),
    })).value as fc.Arbitrary<JsonValue>;
    fc.assert(
      fc.property(json, json, (from, to) => {
        assert.deepStrictEqual(applyJsonPatch(from, createJsonPatch(from, to)), to);
      }),
      { numRuns: 500 },
    );
  });
});
