import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ConfigChange } from '../store-types.js';
import { FileTracker, loadFileState, type FileState } from './file-tracker.js';

const vsDoc = (name: string, host = 'a.example.com', extra = '') => `apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: ${name}}
spec:
  hosts: [${host}]
  http:
  - route:
    - destination: {host: ${host}}
${extra}`;
const summary = (changes: readonly ConfigChange[]) =>
  changes.map((c) => (c.type === 'upsert' ? `upsert ${c.config.meta.name} ${c.config.meta.origin?.file}` : `delete ${c.key.name}`));

function load(text: string, file: string, prev?: FileState): FileState {
  return loadFileState(text, file, prev);
}

test('a valid file yields its objects and no errors', () => {
  const s = load(`${vsDoc('a')}---\n${vsDoc('b')}`, 'x.yaml');
  assert.deepEqual([...s.objects.keys()], ['VirtualService/default/a', 'VirtualService/default/b']);
  assert.deepEqual(s.errors, []);
});

test('a file that does not parse keeps every object it had', () => {
  const good = load(`${vsDoc('a')}---\n${vsDoc('b')}`, 'x.yaml');
  const broken = load('metadata: {name: [\n', 'x.yaml', good);
  assert.equal(broken.objects, good.objects);
  assert.match(broken.errors[0]?.message ?? '', /YAML syntax error/);
});

test('an invalid document keeps the previous version of that object; vanished objects go', () => {
  const good = load(`${vsDoc('a')}---\n${vsDoc('b')}---\n${vsDoc('c')}`, 'x.yaml');
  const next = load(`${vsDoc('a', 'a.example.com', '      weight: -1\n')}---\n${vsDoc('b', 'new.example.com')}`, 'x.yaml', good);
  assert.equal(next.objects.get('VirtualService/default/a'), good.objects.get('VirtualService/default/a'), 'old a kept');
  assert.notEqual(next.objects.get('VirtualService/default/b'), good.objects.get('VirtualService/default/b'), 'b updated');
  assert.equal(next.objects.has('VirtualService/default/c'), false, 'c vanished');
  // The error names the line of the field (weight), not the first line of the object.
  assert.deepEqual(
    next.errors.map((e) => `${e.name} ${e.path} ${e.origin.line}`),
    ['a spec.http[0].route[0].weight 9'],
  );
});

test('an invalid document whose name cannot be read keeps vanished objects of its kind', () => {
  const good = load(`${vsDoc('a')}---\n${vsDoc('b')}`, 'x.yaml');
  const next = load(`${vsDoc('a')}---\napiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {}\nspec: {}\n`, 'x.yaml', good);
  assert.ok(next.objects.has('VirtualService/default/b'), 'b may be the unnamed document: kept');
  assert.equal(next.errors[0]?.path, 'metadata.name');
});

test('the same object twice in one file: the first is used, the second is an error', () => {
  const s = load(`${vsDoc('a')}---\n${vsDoc('a', 'b.example.com')}`, 'x.yaml');
  assert.equal(s.objects.size, 1);
  assert.deepEqual(
    s.objects.get('VirtualService/default/a')?.spec,
    load(vsDoc('a'), 'x.yaml').objects.get('VirtualService/default/a')?.spec,
  );
  assert.deepEqual(
    s.errors.map((e) => [e.origin.line, e.message]),
    [[10, 'defined twice in this file (first at line 1); the first definition is used']],
  );
});

test('tracker: changes per file, deletes when a file goes, no change for identical content', () => {
  const t = new FileTracker();
  assert.deepEqual(summary(t.set('a.yaml', load(vsDoc('x'), 'cfg/a.yaml'))), ['upsert x cfg/a.yaml']);
  assert.deepEqual(summary(t.set('a.yaml', load(vsDoc('x'), 'cfg/a.yaml'))), [], 're-read, same content');
  assert.deepEqual(summary(t.set('a.yaml', load(vsDoc('x', 'other.com'), 'cfg/a.yaml'))), ['upsert x cfg/a.yaml']);
  assert.deepEqual(summary(t.set('a.yaml', undefined)), ['delete x']);
  assert.deepEqual([...t.files()], []);
});

test('tracker: the same object in two files — the first file (sorted) wins and the second gets an error naming both', () => {
  const t = new FileTracker();
  assert.deepEqual(summary(t.set('b.yaml', load(vsDoc('x', 'b.com'), 'cfg/b.yaml'))), ['upsert x cfg/b.yaml']);
  // a.yaml sorts first: it takes over.
  assert.deepEqual(summary(t.set('a.yaml', load(vsDoc('x', 'a.com'), 'cfg/a.yaml'))), ['upsert x cfg/a.yaml']);
  assert.deepEqual(
    t.errors().map((e) => `${e.origin.file}:${e.origin.line} ${e.message}`),
    ['cfg/b.yaml:1 also defined in cfg/a.yaml:1, which comes first and is used; this definition in cfg/b.yaml is ignored'],
  );
  // b changes: still loses, nothing to apply.
  assert.deepEqual(summary(t.set('b.yaml', load(vsDoc('x', 'c.com'), 'cfg/b.yaml'))), []);
  // a drops it: b's version takes over, and the conflict error goes.
  assert.deepEqual(summary(t.set('a.yaml', load(vsDoc('y'), 'cfg/a.yaml'))).sort(), ['upsert x cfg/b.yaml', 'upsert y cfg/a.yaml']);
  assert.deepEqual(t.errors(), []);
});

test('tracker: identical content moving to another file raises no change', () => {
  const t = new FileTracker();
  t.set('a.yaml', load(vsDoc('x'), 'cfg/a.yaml'));
  assert.deepEqual(summary(t.set('b.yaml', load(vsDoc('x'), 'cfg/b.yaml'))), []);
  assert.deepEqual(summary(t.set('a.yaml', undefined)), []);
  assert.deepEqual(summary(t.set('b.yaml', undefined)), ['delete x']);
});
