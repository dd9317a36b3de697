/**
 * Counterexamples the config fuzzer (test/fuzz/config-fuzz.test.ts) found, kept as regressions.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadFileState } from '../sources/file-tracker.js';
import { validateObject } from './validate-object.js';

const errors = (text: string, file = 'cfg/f.yaml'): string[] =>
  loadFileState(text, file, undefined).errors.map((e) => `${e.kind ?? ''} ${e.name ?? ''} ${e.path ?? ''}: ${e.message}`);

test('a __proto__ key is reported, not silently dropped (a subset selecting everything, an unknown field accepted)', () => {
  // Before: the subset's labels came out empty (matching every endpoint) and the object was accepted.
  assert.deepEqual(
    errors(
      'apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: {name: a}\nspec: {host: a.b, subsets: [{name: v1, labels: {__proto__: v1}}]}\n',
    ),
    ['DestinationRule a spec.subsets[0].labels.__proto__: key "__proto__" is not allowed'],
  );
  assert.deepEqual(
    errors(
      '{"apiVersion":"networking.istio.io/v1","kind":"VirtualService","metadata":{"name":"a"},"spec":{"hosts":["a.b"],"__proto__":{"x":1},"http":[{"route":[{"destination":{"host":"a.b"}}]}]}}',
      'cfg/f.json',
    ),
    ['VirtualService a spec.__proto__: key "__proto__" is not allowed'],
  );
  assert.deepEqual(
    errors(
      'apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: a, labels: {__proto__: x}}\nspec: {hosts: [a.b], http: [{route: [{destination: {host: a.b}}]}]}\n',
    ),
    ['VirtualService a metadata.labels[__proto__]: key "__proto__" is not allowed'],
  );
});

test('a spec nested 10,000 levels deep (possible from the API server, which allows 10,000) is an error, not a stack overflow', () => {
  let deep: unknown = 'x';
  for (let i = 0; i < 10_000; i++) deep = { a: deep };
  const r = validateObject(
    {
      apiVersion: 'networking.istio.io/v1',
      kind: 'VirtualService',
      metadata: { name: 'deep', namespace: 'ns' },
      spec: { hosts: ['a.b'], x: deep },
    },
    { file: 'k8s://ns/VirtualService/deep' },
  );
  assert.ok(!r.ok);
  assert.deepEqual(
    r.errors.map((e) => `${e.kind} ${e.namespace}/${e.name} ${e.path}: ${e.message}`),
    ['VirtualService ns/deep spec: nesting deeper than 100 levels'],
  );
});

test('a collection used as a YAML key is a validation error, and yaml prints no process warning for it', async () => {
  const warnings: string[] = [];
  const onWarning = (w: Error): void => {
    warnings.push(w.message);
  };
  process.on('warning', onWarning);
  try {
    assert.deepEqual(
      errors('apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: complex}\nspec: {? [a, b] : c}\n'),
      [
        'VirtualService complex spec.[ a, b ]: unknown field "[ a, b ]"',
        'VirtualService complex spec: http, tcp or tls must be provided in virtual service',
      ],
    );
    await new Promise((r) => setImmediate(r)); // process warnings are emitted on the next tick
  } finally {
    process.off('warning', onWarning);
  }
  assert.deepEqual(warnings, []);
});
