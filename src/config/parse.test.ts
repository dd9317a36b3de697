import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createLogger } from '../util/log.js';
import { parseConfigFile, type ParsedFile } from './parse.js';

function parsed(text: string, file = 'a.yaml', limits = {}): ParsedFile {
  const r = parseConfigFile(text, file, { limits });
  assert.ok(r.ok, r.ok ? '' : JSON.stringify(r.errors));
  return r.value;
}
function failure(text: string, file = 'a.yaml', limits = {}): string[] {
  const r = parseConfigFile(text, file, { limits });
  assert.ok(!r.ok, 'expected the file to fail');
  return r.errors.map((e) => `${e.origin.file}:${e.origin.line ?? '-'} ${e.message}`);
}

const MULTI = `# leading comment
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: reviews
spec:
  hosts: [reviews]
---
---
# a Kubernetes Service: not served, skipped
apiVersion: v1
kind: Service
metadata: {name: reviews}
---
apiVersion: networking.istio.io/v1beta1
kind: DestinationRule
metadata: {name: reviews, namespace: prod}
spec: {host: reviews}
...
---
apiVersion: v1
kind: ConfigMap
metadata: {name: deny}
`;

test('multi-document YAML keeps each document with its 1-based start line; unserved kinds and empty documents are skipped', () => {
  const lines: string[] = [];
  const r = parseConfigFile(MULTI, 'cfg/a.yaml', { logger: createLogger({ level: 'debug', sink: (l) => lines.push(l) }) });
  assert.ok(r.ok);
  assert.deepEqual(
    r.value.documents.map((d) => [d.object.kind, d.origin.file, d.origin.line]),
    [
      ['VirtualService', 'cfg/a.yaml', 2],
      ['DestinationRule', 'cfg/a.yaml', 15],
    ],
  );
  assert.deepEqual(r.value.documents[1]?.object.metadata, { name: 'reviews', namespace: 'prod' });
  assert.equal(r.value.skipped, 3); // the empty document, the Service, the ConfigMap
  assert.deepEqual(r.value.errors, []);
  const notes = lines.map((l) => JSON.parse(l) as { level: string; kind?: string; line?: number });
  assert.deepEqual(
    notes.map((n) => [n.level, n.kind, n.line]),
    [
      ['debug', 'Service', 11],
      ['debug', 'ConfigMap', 21],
    ],
  );
});

test('a served kind with a bad version is passed on (validation rejects it); a bare list is an error', () => {
  const f = parsed('apiVersion: networking.istio.io/v9\nkind: Gateway\nmetadata: {name: g}\n---\n- a\n- b\n');
  assert.equal(f.documents.length, 1);
  assert.deepEqual(
    f.errors.map((e) => [e.origin.line, e.message]),
    [[5, 'document is not a Kubernetes object (got a list)']],
  );
});

test('a List expands into its items, each with its own line', () => {
  const f = parsed(`apiVersion: v1
kind: List
items:
- apiVersion: networking.istio.io/v1
  kind: Gateway
  metadata: {name: g}
- apiVersion: networking.istio.io/v1
  kind: Sidecar
  metadata: {name: s}
`);
  assert.deepEqual(
    f.documents.map((d) => [d.object.kind, d.origin.line]),
    [
      ['Gateway', 4],
      ['Sidecar', 7],
    ],
  );
});

test('JSON: one object, or a List with items', () => {
  const one = parsed(
    '{"apiVersion":"networking.istio.io/v1","kind":"ServiceEntry","metadata":{"name":"se"},"spec":{"hosts":["a.com"]}}',
    'se.json',
  );
  assert.deepEqual(
    one.documents.map((d) => [d.object.kind, d.origin.line]),
    [['ServiceEntry', 1]],
  );
  const list = parsed(
    '{\n  "apiVersion": "v1",\n  "kind": "List",\n  "items": [\n    {"apiVersion": "networking.istio.io/v1", "kind": "Gateway", "metadata": {"name": "g"}},\n    {"apiVersion": "v1", "kind": "ConfigMap"},\n    {"apiVersion": "networking.istio.io/v1", "kind": "Sidecar", "metadata": {"name": "s"}}\n  ]\n}\n',
    'list.JSON',
  );
  assert.deepEqual(
    list.documents.map((d) => [d.object.kind, d.origin.line]),
    [
      ['Gateway', 5],
      ['Sidecar', 7],
    ],
  );
  assert.equal(list.skipped, 1);
  assert.match(failure('{"kind": "Gateway",', 'bad.json')[0] ?? '', /^bad\.json:\S+ JSON syntax error: /);
});

test('a YAML syntax error fails the whole file, with file and line', () => {
  assert.deepEqual(failure('apiVersion: networking.istio.io/v1\nkind: Gateway\n---\nmetadata: {name: [x\nspec: 1\n', 'cfg/broken.yaml'), [
    'cfg/broken.yaml:5 YAML syntax error: Flow sequence in block collection must be sufficiently indented and end with a ]',
    'cfg/broken.yaml:5 YAML syntax error: Flow map in block collection must be sufficiently indented and end with a }',
  ]);
  assert.match(failure('a: 1\na: 2\n')[0] ?? '', /^a\.yaml:2 YAML syntax error: Map keys must be unique/);
});

test('limits: file size, alias expansion, nesting depth, document count', () => {
  assert.deepEqual(failure('a: 1\n'.repeat(10), 'big.yaml', { maxFileBytes: 20 }), [
    'big.yaml:- file is 50 bytes, larger than the limit of 20 bytes',
  ]);
  const laughs = [
    'a: &a [x, x, x, x, x, x, x, x, x]',
    'b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]',
    'c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]',
    'd: [*c, *c, *c, *c, *c, *c, *c, *c, *c]',
  ].join('\n');
  assert.match(failure(laughs)[0] ?? '', /^a\.yaml:1 YAML document cannot be expanded: .*alias limit 100/);
  // Deep nesting is refused before the YAML parser sees it (it recurses per level).
  assert.deepEqual(failure(`a: ${'['.repeat(5000)}${']'.repeat(5000)}\n`), ['a.yaml:1 nesting deeper than 100 levels']);
  const block = Array.from({ length: 150 }, (_, i) => `${' '.repeat(i)}k${i}:`).join('\n') + ' 1\n';
  assert.deepEqual(failure(block), ['a.yaml:101 nesting deeper than 100 levels']);
  assert.deepEqual(failure(`${'- '.repeat(200)}x\n`), ['a.yaml:1 nesting deeper than 100 levels']);
  assert.deepEqual(failure('x: 1\n---\n'.repeat(20), 'many.yaml', { maxDocuments: 5 }), ['many.yaml:10 more than 5 documents in one file']);
  assert.deepEqual(failure(JSON.stringify({ a: JSON.parse('['.repeat(200) + ']'.repeat(200)) as unknown }), 'deep.json'), [
    'deep.json:1 nesting deeper than 100 levels',
  ]);
  // Brackets inside scalars and comments do not count.
  parsed(`a: "${'['.repeat(300)}"\nb: |\n  ${'{'.repeat(300)}\n# ${'['.repeat(300)}\nc: x${'['.repeat(300)}\n`);
  // Realistic deep objects pass easily.
  parsed(Array.from({ length: 40 }, (_, i) => `${'  '.repeat(i)}k${i}:`).join('\n') + ' 1\n');
});
