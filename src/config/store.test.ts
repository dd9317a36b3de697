import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Config, ConfigError } from './config.js';
import { createLogger } from '../util/log.js';
import type { ConfigEvent } from './store-types.js';
import { ConfigStore } from './store.js';
import { validateObject, type RawObject } from './validation/index.js';

function cfg(kind: 'VirtualService' | 'ServiceEntry', name: string, namespace = 'default', host = 'a.example.com'): Config {
  const spec =
    kind === 'VirtualService'
      ? { hosts: [host], http: [{ route: [{ destination: { host } }] }] }
      : { hosts: [host], ports: [{ number: 80, name: 'http', protocol: 'HTTP' }], resolution: 'DNS' };
  const doc: RawObject = { apiVersion: 'networking.istio.io/v1', kind, metadata: { name, namespace }, spec };
  const r = validateObject(doc, { file: 'mem' });
  assert.ok(r.ok);
  return r.value;
}
const summary = (events: readonly ConfigEvent[]) => events.map((e) => `${e.type} ${e.key.kind}/${e.key.namespace}/${e.key.name}`);

test('apply returns and emits add, update and delete events', () => {
  const store = new ConfigStore();
  const heard: string[][] = [];
  store.onChange((events) => heard.push(summary(events)));
  const a = cfg('VirtualService', 'a');
  assert.deepEqual(summary(store.apply([{ type: 'upsert', config: a }])), ['add VirtualService/default/a']);
  const a2 = cfg('VirtualService', 'a', 'default', 'b.example.com');
  const events = store.apply([{ type: 'upsert', config: a2 }]);
  assert.deepEqual(summary(events), ['update VirtualService/default/a']);
  assert.equal(events[0]?.old, a);
  assert.equal(events[0]?.config, a2);
  assert.deepEqual(summary(store.apply([{ type: 'delete', key: { kind: 'VirtualService', namespace: 'default', name: 'a' } }])), [
    'delete VirtualService/default/a',
  ]);
  assert.deepEqual(heard, [['add VirtualService/default/a'], ['update VirtualService/default/a'], ['delete VirtualService/default/a']]);
  assert.equal(store.snapshot().get('VirtualService', 'default', 'a'), undefined);
});

test('an upsert with the same resourceVersion, or a delete of nothing, is no event', () => {
  const store = new ConfigStore();
  let calls = 0;
  store.onChange(() => calls++);
  const a = cfg('VirtualService', 'a');
  store.apply([{ type: 'upsert', config: a }]);
  const snap = store.snapshot();
  const same = cfg('VirtualService', 'a'); // another object, same content
  assert.notEqual(same, a);
  assert.deepEqual(store.apply([{ type: 'upsert', config: same }]), []);
  assert.deepEqual(store.apply([{ type: 'delete', key: { kind: 'ServiceEntry', namespace: 'x', name: 'y' } }]), []);
  assert.equal(calls, 1);
  assert.equal(store.snapshot(), snap, 'no change, same snapshot');
  assert.equal(store.snapshot().get('VirtualService', 'default', 'a'), a, 'the stored object keeps its identity');
});

test('a batch reports the net effect per object', () => {
  const store = new ConfigStore();
  const a = cfg('VirtualService', 'a');
  const b = cfg('VirtualService', 'b');
  store.apply([{ type: 'upsert', config: b }]);
  const events = store.apply([
    { type: 'upsert', config: a },
    { type: 'delete', key: { kind: 'VirtualService', namespace: 'default', name: 'a' } }, // added and gone: nothing
    { type: 'delete', key: { kind: 'VirtualService', namespace: 'default', name: 'b' } },
    { type: 'upsert', config: b }, // deleted and back unchanged: nothing
    { type: 'upsert', config: cfg('ServiceEntry', 's') },
  ]);
  assert.deepEqual(summary(events), ['add ServiceEntry/default/s']);
});

test('snapshots are immutable and share the maps of kinds that did not change', () => {
  const store = new ConfigStore();
  store.apply([
    { type: 'upsert', config: cfg('VirtualService', 'a') },
    { type: 'upsert', config: cfg('ServiceEntry', 's') },
  ]);
  const s1 = store.snapshot();
  assert.equal(store.snapshot(), s1, 'snapshot() is the same object while nothing changes');
  store.apply([{ type: 'upsert', config: cfg('VirtualService', 'b') }]);
  const s2 = store.snapshot();
  assert.notEqual(s2, s1);
  assert.equal(s2.byKind('ServiceEntry'), s1.byKind('ServiceEntry'), 'unchanged kind: same map');
  assert.notEqual(s2.byKind('VirtualService'), s1.byKind('VirtualService'));
  assert.equal(s2.byKind('Gateway'), s1.byKind('Gateway'));
  assert.deepEqual([...s1.byKind('VirtualService').keys()], ['default/a'], 'the old snapshot did not move');
  assert.deepEqual([...s2.byKind('VirtualService').keys()].sort(), ['default/a', 'default/b']);
  assert.ok(s2.generation > s1.generation);
});

test('list is sorted by namespace/name and filters by namespace', () => {
  const store = new ConfigStore();
  store.apply(['c', 'a', 'b'].map((n) => ({ type: 'upsert' as const, config: cfg('VirtualService', n, n === 'b' ? 'other' : 'default') })));
  const snap = store.snapshot();
  assert.deepEqual(
    snap.list('VirtualService').map((c) => `${c.meta.namespace}/${c.meta.name}`),
    ['default/a', 'default/c', 'other/b'],
  );
  assert.deepEqual(
    snap.list('VirtualService', 'other').map((c) => c.meta.name),
    ['b'],
  );
  assert.deepEqual(snap.list('Sidecar'), []);
  assert.equal(snap.get('VirtualService', 'other', 'b')?.meta.name, 'b');
});

test('a throwing listener is logged and does not stop the store or other listeners', () => {
  const logs: string[] = [];
  const store = new ConfigStore({ logger: createLogger({ sink: (l) => logs.push(l) }) });
  let second = 0;
  store.onChange(() => {
    throw new Error('boom');
  });
  store.onChange(() => second++);
  assert.deepEqual(summary(store.apply([{ type: 'upsert', config: cfg('VirtualService', 'a') }])), ['add VirtualService/default/a']);
  assert.equal(second, 1);
  assert.ok(logs.some((l) => l.includes('config listener failed') && l.includes('boom')));
  assert.ok(store.snapshot().get('VirtualService', 'default', 'a'));
});

test('onChange returns an unsubscribe', () => {
  const store = new ConfigStore();
  let n = 0;
  const off = store.onChange(() => n++);
  store.apply([{ type: 'upsert', config: cfg('VirtualService', 'a') }]);
  off();
  store.apply([{ type: 'upsert', config: cfg('VirtualService', 'b') }]);
  assert.equal(n, 1);
});

test('errors are kept per source (latest set) and logged at warn once', () => {
  const logs: { level: string; msg: string }[] = [];
  const store = new ConfigStore({
    logger: createLogger({ level: 'debug', sink: (l) => logs.push(JSON.parse(l) as { level: string; msg: string }) }),
  });
  const e1: ConfigError = {
    origin: { file: 'a.yaml', line: 3 },
    kind: 'VirtualService',
    namespace: 'default',
    name: 'a',
    path: 'spec.hosts',
    message: 'bad',
  };
  const e2: ConfigError = { origin: { file: 'b.yaml' }, message: 'YAML syntax error' };
  store.reportErrors('file:/cfg', [e1]);
  store.reportErrors('kube', [e2]);
  store.reportErrors('file:/cfg', [e1, e2]); // e1 again: not logged twice
  assert.deepEqual(
    [...store.errors().entries()],
    [
      ['file:/cfg', [e1, e2]],
      ['kube', [e2]],
    ],
  );
  const warns = logs.filter((l) => l.level === 'warn').map((l) => l.msg);
  assert.deepEqual(warns, [
    'invalid config: a.yaml:3 VirtualService default/a spec.hosts: bad',
    'invalid config: b.yaml: YAML syntax error',
    'invalid config: b.yaml: YAML syntax error',
  ]);
  store.reportErrors('file:/cfg', []);
  assert.deepEqual([...store.errors().keys()], ['kube']);
});

test('per-namespace lists patched from the previous map and the changed ids between maps match a full recomputation (random batches)', async () => {
  const { default: fc } = await import('fast-check');
  const { changedIdsBetween } = await import('./store.js');
  const op = fc.record({
    del: fc.boolean(),
    ns: fc.constantFrom('a', 'b', 'c'),
    name: fc.constantFrom('x', 'y', 'z', 'w'),
    host: fc.constantFrom('h1.example.com', 'h2.example.com'),
  });
  fc.assert(
    fc.property(fc.array(fc.array(op, { minLength: 1, maxLength: 4 }), { maxLength: 12 }), fc.boolean(), (batches, readEvery) => {
      const store = new ConfigStore();
      let before = store.snapshot();
      for (const batch of batches) {
        store.apply(
          batch.map((o) =>
            o.del
              ? { type: 'delete' as const, key: { kind: 'VirtualService' as const, namespace: o.ns, name: o.name } }
              : {
                  type: 'upsert' as const,
                  config: {
                    ...cfg('VirtualService', o.name, o.ns, o.host),
                    meta: { ...cfg('VirtualService', o.name, o.ns, o.host).meta, resourceVersion: o.host },
                  },
                },
          ),
        );
        const after = store.snapshot();
        const map = after.byKind('VirtualService');
        for (const ns of ['a', 'b', 'c']) {
          if (!readEvery && ns !== 'a') continue; // some lists are never read: the next patch must fall back
          const want = [...map.values()]
            .filter((c) => c.meta.namespace === ns)
            .sort((p, q) => (p.meta.name < q.meta.name ? -1 : p.meta.name > q.meta.name ? 1 : 0));
          assert.deepEqual(after.list('VirtualService', ns), want);
        }
        const ids = changedIdsBetween(before.byKind('VirtualService'), map);
        assert.ok(ids, 'consecutive maps are related');
        const prev = before.byKind('VirtualService');
        for (const id of new Set([...prev.keys(), ...map.keys()]))
          if (prev.get(id) !== map.get(id)) assert.ok(ids.has(id), `changed ${id} is reported`);
        before = after;
      }
    }),
    { numRuns: 200 },
  );
});
