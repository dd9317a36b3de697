import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatMessages, logLine } from './format.js';
import { MSG, render } from './messages.js';
import type { Message } from './model.js';
import { isSuppressed, parseSuppression } from './run.js';

const msg: Message = {
  type: MSG.ReferencedResourceNotFound,
  resource: { kind: 'VirtualService', namespace: 'default', name: 'reviews', origin: { file: 'x.yaml', line: 12 } },
  args: ['host', 'reviews.bogus'],
};

test('Go verbs: %q quotes and escapes, %v prints slices as [a b]', () => {
  assert.equal(render('%s %q %v %d %%', ['a', 'say "hi"', [1, 2], 3]), 'a "say \\"hi\\"" [1 2] 3 %');
});

test('log line: origin with file:line inside the parentheses; colour only when asked', () => {
  assert.equal(
    logLine(msg, false),
    'Error [IST0101] (VirtualService default/reviews x.yaml:12) Referenced host not found: "reviews.bogus"',
  );
  assert.equal(
    logLine(msg, true),
    '\x1b[31mError\x1b[0m [IST0101] (VirtualService default/reviews x.yaml:12) Referenced host not found: "reviews.bogus"',
  );
  const noOrigin: Message = { ...msg, resource: { kind: 'Namespace', namespace: '', name: 'default' } };
  assert.equal(
    logLine(noOrigin, false),
    'Error [IST0101] (Namespace default) Referenced host not found: "reviews.bogus"',
    'a cluster-scoped resource is named as istioctl names it',
  );
});

test('json output has no reference field without an origin', () => {
  const out = JSON.parse(
    formatMessages([{ ...msg, resource: { kind: 'VirtualService', namespace: 'default', name: 'r' } }], 'json', false),
  ) as Record<string, string>[];
  assert.deepEqual(Object.keys(out[0] ?? {}), ['code', 'documentationUrl', 'level', 'message', 'origin']);
});

test('suppressions: code must be IST####, globs match the resource name', () => {
  assert.equal(typeof parseSuppression('IST0102'), 'string');
  assert.equal(typeof parseSuppression('X=Y'), 'string');
  const s = parseSuppression('IST0101=VirtualService default/*');
  assert.ok(typeof s !== 'string');
  assert.equal(isSuppressed(msg, [s]), true);
  const other = parseSuppression('IST0101=VirtualService prod/*');
  assert.ok(typeof other !== 'string');
  assert.equal(isSuppressed(msg, [other]), false);
});
