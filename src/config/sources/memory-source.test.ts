import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatConfigError } from '../config.js';
import { ConfigStore } from '../store.js';
import type { RawObject } from '../validation/index.js';
import { MemorySource } from './memory-source.js';

const gw = (name: string, host = '*.example.com'): RawObject => ({
  apiVersion: 'networking.istio.io/v1',
  kind: 'Gateway',
  metadata: { name, namespace: 'edge' },
  spec: { servers: [{ port: { number: 80, name: 'http', protocol: 'HTTP' }, hosts: [host] }] },
});

test('objects added before start are handed over on start; later writes go straight to the sink', async () => {
  const src = new MemorySource();
  assert.ok(src.add(gw('a')).ok);
  const store = new ConfigStore();
  const events: string[] = [];
  store.onChange((evs) => events.push(...evs.map((e) => `${e.type} ${e.key.name}`)));
  await src.start(store);
  assert.deepEqual(events, ['add a']);
  assert.ok(src.update(gw('a', 'www.example.com')).ok);
  assert.ok(src.upsert(gw('b')).ok);
  assert.equal(src.delete({ kind: 'Gateway', namespace: 'edge', name: 'a' }), true);
  assert.equal(src.delete({ kind: 'Gateway', namespace: 'edge', name: 'a' }), false);
  assert.deepEqual(events, ['add a', 'update a', 'add b', 'delete a']);
  assert.deepEqual(
    src.list().map((c) => c.meta.name),
    ['b'],
  );
  await src.stop();
});

test('writes go through validation; an invalid update keeps the previous version and reports the error until fixed', async () => {
  const src = new MemorySource({ name: 'test' });
  const store = new ConfigStore();
  await src.start(store);
  assert.ok(src.add(gw('a')).ok);
  const before = store.snapshot().get('Gateway', 'edge', 'a');
  const bad = src.update(gw('a', 'short'));
  assert.ok(!bad.ok);
  assert.deepEqual(bad.errors.map(formatConfigError), [
    'test Gateway edge/a spec.servers[0].hosts[0]: short names (non FQDN) are not allowed',
  ]);
  assert.equal(store.snapshot().get('Gateway', 'edge', 'a'), before);
  assert.deepEqual([...store.errors().keys()], ['test']);
  assert.ok(src.update(gw('a', 'ok.example.com')).ok);
  assert.deepEqual([...store.errors().keys()], []);
});

test('add refuses an existing object, update a missing one', () => {
  const src = new MemorySource();
  assert.ok(src.add(gw('a')).ok);
  const again = src.add(gw('a'));
  assert.ok(!again.ok && again.errors[0]?.message === 'already exists');
  const missing = src.update(gw('b'));
  assert.ok(!missing.ok && missing.errors[0]?.message === 'not found');
});
