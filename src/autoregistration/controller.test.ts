import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { create, type JsonObject } from '@bufbuild/protobuf';
import { ConfigStore, MemorySource, type Config } from '../config/index.js';
import { NodeSchema } from '../gen/envoy/config/core/v3/base_pb.js';
import { parseProxy, type Proxy } from '../model/index.js';
import { isHealthyWorkloadEntry } from '../registry/service-entry-registry.js';
import { MeshError } from '../util/errors.js';
import { silentLogger } from '../util/log.js';
import { FakeClock } from '../../test/fake-clock.js';
import { WorkloadEntryController, type WorkloadConnection } from './controller.js';
import { MemoryWorkloadEntryStore } from './memory-store.js';

const GRACE = 10_000;
const START = Date.parse('2026-03-01T10:00:00Z');

const GROUP = {
  apiVersion: 'networking.istio.io/v1',
  kind: 'WorkloadGroup',
  metadata: { name: 'vm', namespace: 'shop' },
  spec: {
    metadata: { labels: { app: 'vm', version: 'v1' }, annotations: { team: 'infra' } },
    template: { serviceAccount: 'vm-sa', ports: { http: 8080 } },
  },
};

/** A config store holding the group (files) and the auto-registered entries (memory), as discovery wires them. */
function setup(clock: FakeClock, opts: { group?: boolean } = {}) {
  const store = new ConfigStore();
  const files = new MemorySource({ name: 'files' });
  if (opts.group !== false) assert.ok(files.add(GROUP).ok);
  const auto = new MemorySource({ name: 'auto-registration' });
  void files.start(store);
  void auto.start(store);
  const entries = new MemoryWorkloadEntryStore(auto);
  const controller = (instanceId: string, extra: { validateIdentity?: boolean; maxConnectionAgeMs?: number } = {}) =>
    new WorkloadEntryController({
      instanceId,
      store: entries,
      group: (ns, name) => store.snapshot().get('WorkloadGroup', ns, name),
      gracePeriodMs: GRACE,
      clock,
      logger: silentLogger,
      identity: (p) => ({ namespace: p.namespace, serviceAccount: String(p.metadata.raw.SERVICE_ACCOUNT ?? '') }),
      ...extra,
    });
  const entry = (name = 'vm-10.0.0.5'): Config<'WorkloadEntry'> | undefined => store.snapshot().get('WorkloadEntry', 'shop', name);
  return { store, files, entries, controller, entry };
}

function vmProxy(metadata: JsonObject = {}, ip = '10.0.0.5'): Proxy {
  const r = parseProxy(
    create(NodeSchema, {
      id: `sidecar~${ip}~vm-1.shop~shop.svc.cluster.local`,
      metadata: { NAMESPACE: 'shop', AUTO_REGISTER_GROUP: 'vm', SERVICE_ACCOUNT: 'vm-sa', LABELS: { zone: 'lab' }, ...metadata },
      locality: { region: 'eu', zone: 'eu-1' },
    }),
  );
  assert.ok(r.ok);
  return r.value;
}

let seq = 0;
const conn = (proxy: Proxy, clock: FakeClock): WorkloadConnection => ({ id: `c${++seq}`, proxy, connectedAt: clock.now() });

describe('WorkloadEntryController', () => {
  it('creates the entry from the group on connect, as istiod names and fills it', async () => {
    const clock = new FakeClock(START);
    const { controller, entry } = setup(clock);
    const c = controller('meshpilot-a');
    await c.onConnect(conn(vmProxy({ NETWORK: 'lab-net' }), clock));
    const e = entry('vm-10.0.0.5-lab-net');
    assert.ok(e, 'the entry is named <group>-<ip>-<network>');
    assert.equal(e.spec.address, '10.0.0.5');
    assert.equal(e.spec.serviceAccount, 'vm-sa');
    assert.equal(e.spec.network, 'lab-net');
    assert.equal(e.spec.locality, 'eu/eu-1');
    assert.deepEqual(e.spec.ports, { http: 8080 });
    assert.deepEqual({ ...e.spec.labels }, { app: 'vm', version: 'v1', zone: 'lab' }, 'template, group metadata, then node labels');
    assert.deepEqual(e.meta.annotations, {
      'istio.io/autoRegistrationGroup': 'vm',
      team: 'infra',
      'istio.io/workloadController': 'meshpilot-a',
      'istio.io/connectedAt': new Date(START).toISOString(),
    });
    assert.equal(c.stats.registrations, 1);
  });

  it('keeps the entry while another connection of the same VM is open, removes it a grace period after the last', async () => {
    const clock = new FakeClock(START);
    const { controller, entry } = setup(clock);
    const c = controller('meshpilot-a');
    const first = conn(vmProxy(), clock);
    clock.advance(5);
    const second = conn(vmProxy(), clock);
    await c.onConnect(first);
    await c.onConnect(second);
    c.onDisconnect(first);
    await c.idle();
    assert.equal(entry()?.meta.annotations['istio.io/disconnectedAt'], undefined, 'one stream is still open');
    clock.advance(GRACE * 2);
    await c.idle();
    assert.ok(entry(), 'nothing was scheduled for removal');

    c.onDisconnect(second);
    await c.idle();
    const disconnected = entry();
    assert.ok(disconnected);
    assert.equal(disconnected.meta.annotations['istio.io/disconnectedAt'], new Date(clock.now()).toISOString());
    assert.equal(disconnected.meta.annotations['istio.io/connectedAt'], undefined);
    clock.advance(GRACE - 1);
    await c.idle();
    assert.ok(entry(), 'still there before the grace period ends');
    clock.advance(1);
    await c.idle();
    assert.equal(entry(), undefined, 'removed once the grace period passed');
    assert.equal(c.stats.deletes, 1);
  });

  it('a reconnect within the grace period keeps the entry', async () => {
    const clock = new FakeClock(START);
    const { controller, entry } = setup(clock);
    const c = controller('meshpilot-a');
    const first = conn(vmProxy(), clock);
    await c.onConnect(first);
    c.onDisconnect(first);
    await c.idle();
    assert.ok(entry()?.meta.annotations['istio.io/disconnectedAt']);
    clock.advance(GRACE / 2);
    await c.onConnect(conn(vmProxy(), clock));
    const back = entry();
    assert.ok(back);
    assert.equal(back.meta.annotations['istio.io/disconnectedAt'], undefined);
    assert.equal(back.meta.annotations['istio.io/connectedAt'], new Date(clock.now()).toISOString());
    clock.advance(GRACE * 2);
    await c.idle();
    assert.ok(entry(), 'the cleanup scheduled at the disconnect found it connected again');
    assert.equal(c.stats.deletes, 0);
  });

  it('only the instance the proxy is connected to marks it disconnected (ownership, not leadership)', async () => {
    const clock = new FakeClock(START);
    const { controller, entry } = setup(clock);
    const a = controller('meshpilot-a');
    const b = controller('meshpilot-b');
    const onA = conn(vmProxy(), clock);
    await a.onConnect(onA);
    clock.advance(1000);
    // The VM moved to instance b (a's stream is not closed yet, as when a replica is drained).
    const onB = conn(vmProxy(), clock);
    await b.onConnect(onB);
    assert.equal(entry()?.meta.annotations['istio.io/workloadController'], 'meshpilot-b');
    a.onDisconnect(onA);
    await a.idle();
    assert.equal(entry()?.meta.annotations['istio.io/disconnectedAt'], undefined, 'a no longer owns the entry');
    clock.advance(GRACE * 2);
    await a.idle();
    assert.ok(entry());
    // A connect a processed late (older than b's) does not take the entry back.
    await a.onConnect({ ...conn(vmProxy(), clock), connectedAt: START + 500 });
    assert.equal(entry()?.meta.annotations['istio.io/workloadController'], 'meshpilot-b');

    b.onDisconnect(onB);
    await b.idle();
    clock.advance(GRACE);
    await b.idle();
    assert.equal(entry(), undefined, 'the owner removed it after the grace period');
  });

  it('refuses the stream without its WorkloadGroup; a group (re)created registers connected VMs, a deleted one takes its entries', async () => {
    const clock = new FakeClock(START);
    const { controller, entry, files, entries } = setup(clock, { group: false });
    const c = controller('meshpilot-a');
    await assert.rejects(
      c.onConnect(conn(vmProxy(), clock)),
      (err: unknown) =>
        err instanceof MeshError && err.code === 'FAILED_PRECONDITION' && /cannot find WorkloadGroup shop\/vm/.test(err.message),
    );
    assert.equal(entry(), undefined);
    assert.equal(c.stats.errors, 1);
    // Late registration covers proxies still connected when the group is added.
    const kept = conn(vmProxy(), clock);
    await c.onConnect(kept).catch(() => undefined);
    assert.ok(files.add(GROUP).ok);
    c.onGroupAdded('shop', 'vm');
    await c.idle();
    assert.equal(entry(), undefined, 'a refused stream is not registered later');
    // A connected VM whose entry went with its group (the API server's garbage collection) gets it back with the group.
    await c.onConnect(conn(vmProxy(), clock));
    assert.ok(await entries.remove('shop', 'vm-10.0.0.5', () => true));
    assert.equal(entry(), undefined);
    c.onGroupAdded('shop', 'vm');
    await c.idle();
    assert.equal(entry()?.meta.annotations['istio.io/workloadController'], 'meshpilot-a');
    // File mode: deleting the group removes its entries, as the API server's garbage collection would.
    files.delete({ kind: 'WorkloadGroup', namespace: 'shop', name: 'vm' });
    await c.onGroupDeleted('shop', 'vm');
    assert.equal(entry(), undefined);
  });

  it('refuses an identity that may not act for the entry (another service account, or none)', async () => {
    const clock = new FakeClock(START);
    const { controller, entry } = setup(clock);
    const c = controller('meshpilot-a');
    await assert.rejects(
      c.onConnect(conn(vmProxy({ SERVICE_ACCOUNT: 'intruder' }), clock)),
      /service account mismatch: "intruder" vs "vm-sa"/,
    );
    assert.equal(entry(), undefined);
    const other = setup(clock);
    const noIdentity = new WorkloadEntryController({
      instanceId: 'x',
      store: other.entries,
      group: (ns, name) => other.store.snapshot().get('WorkloadGroup', ns, name),
      gracePeriodMs: GRACE,
      clock,
      logger: silentLogger,
    });
    await assert.rejects(noIdentity.onConnect(conn(vmProxy(), clock)), /requires a verified identity/);
  });

  it('health reports set the Healthy condition; an entry with health checks serves only while it is True', async () => {
    const clock = new FakeClock(START);
    const { controller, entry } = setup(clock);
    const c = controller('meshpilot-a');
    const probe = { PROXY_CONFIG: { readinessProbe: { httpGet: { port: 8080 } } } };
    const k = conn(vmProxy(probe), clock);
    await c.onConnect(k);
    const fresh = entry();
    assert.ok(fresh);
    assert.equal(fresh.meta.annotations['proxy.istio.io/health-checks-enabled'], 'true');
    assert.equal(isHealthyWorkloadEntry(fresh), false, 'unhealthy until the first probe passes');
    clock.advance(10);
    c.onHealth(k, true, '');
    await c.idle();
    const healthy = entry();
    assert.ok(healthy);
    assert.deepEqual(
      healthy.status?.conditions.map((x) => [x.type, x.status]),
      [['Healthy', 'True']],
    );
    assert.equal(isHealthyWorkloadEntry(healthy), true);
    clock.advance(10);
    c.onHealth(k, false, 'Get "http://10.0.0.5:8080/": connection refused');
    await c.idle();
    const sick = entry();
    assert.ok(sick);
    assert.equal(isHealthyWorkloadEntry(sick), false);
    assert.equal(sick.status?.conditions[0]?.message, 'Get "http://10.0.0.5:8080/": connection refused');
    assert.notEqual(sick.meta.resourceVersion, healthy.meta.resourceVersion, 'a health change is a config change (an EDS push)');
  });

  it('the periodic sweep removes an entry connected for longer than any stream lives (a leak)', async () => {
    const clock = new FakeClock(START);
    const { controller, entry } = setup(clock);
    const c = controller('meshpilot-a', { maxConnectionAgeMs: 60_000 });
    await c.onConnect(conn(vmProxy(), clock));
    c.start();
    clock.advance(10 * GRACE);
    await c.idle();
    assert.ok(entry(), '100 s < 1.5 × 60 s is false: kept');
    clock.advance(60_000 * 1.5 - 10 * GRACE);
    await c.sweep();
    assert.ok(entry(), 'exactly the limit: kept');
    clock.advance(1);
    await c.sweep();
    assert.equal(entry(), undefined);
    c.stop();
  });
});
