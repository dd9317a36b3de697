import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { create } from '@bufbuild/protobuf';
import { MemorySource } from '../config/sources/memory-source.js';
import { ConfigStore } from '../config/store.js';
import { NodeSchema } from '../gen/envoy/config/core/v3/base_pb.js';
import { defaultMeshConfig } from '../config/mesh/mesh-config.js';
import { parseProxy } from '../model/proxy.js';
import { PushContext } from '../model/push-context.js';
import { pushRequest } from '../model/push-request.js';
import { Connection } from './connection.js';
import { ConnectionIndex } from './connection-index.js';
import { edsNamesOfHosts, edsOnlyNames, proxyNeedsPush, pushScope, type ChangeScope } from './push-scope.js';
import { TypeUrl } from './type-urls.js';

const se = (name: string, labels: Record<string, string>) => ({
  apiVersion: 'networking.istio.io/v1',
  kind: 'ServiceEntry',
  metadata: { name, namespace: 'default' },
  spec: {
    hosts: [`${name}.default.svc.cluster.local`],
    resolution: 'STATIC',
    ports: [{ number: 80, name: 'http', protocol: 'HTTP' }],
    workloadSelector: { labels },
  },
});
const we = (name: string, labels: Record<string, string>) => ({
  apiVersion: 'networking.istio.io/v1',
  kind: 'WorkloadEntry',
  metadata: { name, namespace: 'default' },
  spec: { address: '10.0.0.1', labels },
});
const vs = (name: string, host: string, dest: string) => ({
  apiVersion: 'networking.istio.io/v1',
  kind: 'VirtualService',
  metadata: { name, namespace: 'default' },
  spec: { hosts: [host], http: [{ route: [{ destination: { host: dest } }] }] },
});

function setup() {
  const store = new ConfigStore();
  const source = new MemorySource();
  void source.start(store);
  let n = 0;
  const push = () => new PushContext({ version: `v${++n}`, mesh: defaultMeshConfig(), config: store.snapshot() });
  return { source, push };
}

function conn(
  watches: Array<[string, string[]]>,
  node: { id: string; metadata?: Record<string, string> } = {
    id: 'sidecar~1.1.1.1~c.default~default.svc.cluster.local',
    metadata: { GENERATOR: 'grpc' },
  },
): Connection {
  const p = parseProxy(create(NodeSchema, node));
  assert.ok(p.ok);
  const c = new Connection({ id: 'c', proxy: p.value, connectedAt: 0, peer: '', sink: { write: async () => {}, end: () => {} } });
  for (const [t, names] of watches) c.setWatched(t, { typeUrl: t, names: new Set(names), wildcard: names.length === 0 });
  return c;
}

const A = 'a.default.svc.cluster.local';
const B = 'b.default.svc.cluster.local';
const req = (...keys: string[]) => pushRequest({ full: true, configsUpdated: keys, start: 0 });

describe('push scoping (proxyNeedsPush by host)', () => {
  it('a VirtualService change reaches proxies watching its hosts, old and new, and no others', () => {
    const { source, push } = setup();
    source.add(se('a', { app: 'a' }));
    source.add(se('b', { app: 'b' }));
    source.add(vs('r', 'a', 'a'));
    const old = push();
    source.update(vs('r', 'b', 'b')); // moved from host a to host b
    const scope = pushScope(req('VirtualService/default/r'), old, push());
    assert.notEqual(scope, 'all');
    assert.deepEqual([...(scope as ChangeScope).hosts].sort(), [A, B]);
    assert.ok(proxyNeedsPush(conn([[TypeUrl.Listener, [`${A}:80`]]]), scope));
    assert.ok(proxyNeedsPush(conn([[TypeUrl.Cluster, [`outbound|80||${B}`]]]), scope));
    assert.ok(!proxyNeedsPush(conn([[TypeUrl.Listener, ['c.default.svc.cluster.local:80']]]), scope));
  });

  it('a WorkloadEntry change scopes to the services whose selector matches it', () => {
    const { source, push } = setup();
    source.add(se('a', { app: 'a' }));
    source.add(se('b', { app: 'b' }));
    const old = push();
    source.add(we('w1', { app: 'b' }));
    const scope = pushScope(req('WorkloadEntry/default/w1'), old, push());
    assert.deepEqual([...(scope as ChangeScope).hosts], [B]);
    assert.ok(!proxyNeedsPush(conn([[TypeUrl.ClusterLoadAssignment, [`outbound|80||${A}`]]]), scope));
    assert.ok(proxyNeedsPush(conn([[TypeUrl.ClusterLoadAssignment, [`outbound|80||${B}`]]]), scope));
  });

  it('an Envoy sidecar is pushed only for hosts its Sidecar scope sees (before or after the change)', () => {
    const { source, push } = setup();
    source.add(se('a', { app: 'a' }));
    source.add({
      ...se('o', { app: 'o' }),
      metadata: { name: 'o', namespace: 'other' },
      spec: { ...se('o', { app: 'o' }).spec, hosts: ['o.other.svc.cluster.local'] },
    });
    source.add({
      apiVersion: 'networking.istio.io/v1',
      kind: 'Sidecar',
      metadata: { name: 'default', namespace: 'other' },
      spec: { egress: [{ hosts: ['./*'] }] },
    });
    source.add(vs('r', 'a', 'a'));
    const old = push();
    source.update({ ...vs('r', 'a', 'a'), spec: { hosts: ['a'], http: [{ timeout: '1s', route: [{ destination: { host: 'a' } }] }] } });
    const next = push();
    const scope = pushScope(req('VirtualService/default/r'), old, next);
    const envoy = (ns: string): Connection =>
      conn(
        [
          [TypeUrl.Listener, []],
          [TypeUrl.Cluster, []],
        ],
        { id: `sidecar~10.9.9.9~x.${ns}~${ns}.svc.cluster.local` },
      );
    assert.ok(!proxyNeedsPush(envoy('other'), scope, [old, next]), 'default/a is outside the other namespace Sidecar scope');
    assert.ok(proxyNeedsPush(envoy('default'), scope, [old, next]), 'no Sidecar in default: it sees a');
    const router = conn([[TypeUrl.Listener, []]], { id: 'router~10.9.9.8~gw.other~other.svc.cluster.local' });
    assert.ok(proxyNeedsPush(router, scope, [old, next]), 'gateways are always pushed');
    // A service entering the scope counts: the other namespace imports default once its Sidecar says so.
    source.update({
      apiVersion: 'networking.istio.io/v1',
      kind: 'Sidecar',
      metadata: { name: 'default', namespace: 'other' },
      spec: { egress: [{ hosts: ['./*', 'default/*'] }] },
    });
    const widened = push();
    assert.ok(proxyNeedsPush(envoy('other'), pushScope(req('VirtualService/default/r'), next, widened), [next, widened]));
  });

  it('unscoped requests and wildcard watches push everyone', () => {
    const { source, push } = setup();
    source.add(se('a', { app: 'a' }));
    const p = push();
    assert.equal(pushScope(pushRequest({ full: true, start: 0 }), p, p), 'all');
    const scope = pushScope(req('ServiceEntry/default/a'), p, p);
    assert.ok(proxyNeedsPush(conn([[TypeUrl.Cluster, []]]), scope), 'a wildcard CDS watch depends on everything');
  });

  it('policies scope by namespace: workloads of the namespace, and for PeerAuthentication the clients of its services; Gateways reach routers only', () => {
    const { source, push } = setup();
    source.add(se('a', { app: 'a' }));
    source.add({
      ...se('o', { app: 'o' }),
      metadata: { name: 'o', namespace: 'other' },
      spec: { ...se('o', { app: 'o' }).spec, hosts: ['o.other.svc.cluster.local'] },
    });
    source.add({
      apiVersion: 'networking.istio.io/v1',
      kind: 'Sidecar',
      metadata: { name: 'default', namespace: 'default' },
      spec: { egress: [{ hosts: ['./*'] }] },
    });
    const pa = {
      apiVersion: 'security.istio.io/v1',
      kind: 'PeerAuthentication',
      metadata: { name: 'default', namespace: 'other' },
      spec: { mtls: { mode: 'STRICT' } },
    };
    const old = push();
    source.add(pa);
    const next = push();
    const envoy = (ns: string): Connection =>
      conn(
        [
          [TypeUrl.Listener, []],
          [TypeUrl.Cluster, []],
        ],
        { id: `sidecar~10.9.9.9~x.${ns}~${ns}.svc.cluster.local` },
      );
    const paScope = pushScope(req('PeerAuthentication/other/default'), old, next);
    assert.ok(proxyNeedsPush(envoy('other'), paScope, [old, next]), 'workloads of the namespace (inbound mTLS)');
    assert.ok(!proxyNeedsPush(envoy('default'), paScope, [old, next]), 'default imports only itself: no client of other');
    assert.ok(proxyNeedsPush(envoy('third'), paScope, [old, next]), 'third sees every service, o included (auto mTLS)');
    assert.ok(proxyNeedsPush(conn([[TypeUrl.Cluster, ['outbound|80||o.other.svc.cluster.local']]]), paScope), 'a proxyless client of o');
    assert.ok(!proxyNeedsPush(conn([[TypeUrl.Cluster, [`outbound|80||${A}`]]]), paScope));
    const authz = pushScope(req('AuthorizationPolicy/other/deny'), old, next);
    assert.ok(!proxyNeedsPush(envoy('third'), authz, [old, next]), 'authorization is enforced by the server side only');
    assert.ok(proxyNeedsPush(envoy('other'), authz, [old, next]));
    assert.equal(pushScope(req('PeerAuthentication/istio-system/default'), old, next), 'all', 'the root namespace is mesh-wide');
    const gw = pushScope(req('Gateway/other/gw'), old, next);
    assert.ok(!proxyNeedsPush(envoy('other'), gw, [old, next]));
    assert.ok(proxyNeedsPush(conn([[TypeUrl.Listener, []]], { id: 'router~10.9.9.8~gw.other~other.svc.cluster.local' }), gw));
  });
});

describe('push scoping of Gateway API changes', () => {
  it('a GAMMA route reaches clients of its parent Service; Gateways, classes and L4 routes reach routers only', () => {
    const { source, push } = setup();
    source.add(se('a', { app: 'a' }));
    source.add(se('b', { app: 'b' }));
    const route = {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'HTTPRoute',
      metadata: { name: 'r', namespace: 'default' },
      spec: {
        parentRefs: [{ group: '', kind: 'Service', name: 'a' }, { name: 'gw' }],
        rules: [{ backendRefs: [{ name: 'b', port: 80 }] }],
      },
    };
    const old = push();
    source.add(route);
    const next = push();
    const scope = pushScope(req('HTTPRoute/default/r'), old, next);
    assert.notEqual(scope, 'all');
    assert.deepEqual([...(scope as ChangeScope).hosts], [A]);
    assert.ok(proxyNeedsPush(conn([[TypeUrl.Cluster, [`outbound|80||${A}`]]]), scope));
    assert.ok(!proxyNeedsPush(conn([[TypeUrl.Cluster, [`outbound|80||${B}`]]]), scope));
    const router = conn([[TypeUrl.Listener, []]], { id: 'router~10.9.9.8~gw.default~default.svc.cluster.local' });
    for (const key of ['KubernetesGateway/default/gw', 'GatewayClass//istio', 'TCPRoute/default/t', 'TLSRoute/default/t']) {
      const s = pushScope(req(key), old, next);
      assert.ok(
        !proxyNeedsPush(
          conn(
            [
              [TypeUrl.Listener, []],
              [TypeUrl.Cluster, []],
            ],
            { id: 'sidecar~10.9.9.9~x.default~default.svc.cluster.local' },
          ),
          s,
          [old, next],
        ),
        `${key}: no sidecar`,
      );
      assert.ok(proxyNeedsPush(router, s), `${key}: routers`);
    }
  });
});

describe('EDS-only reach (edsNamesOfHosts, ConnectionIndex.endpointReach, edsOnlyNames)', () => {
  const dr = (name: string, namespace: string, host: string, subsets: string[]) => ({
    apiVersion: 'networking.istio.io/v1',
    kind: 'DestinationRule',
    metadata: { name, namespace },
    spec: { host, subsets: subsets.map((s) => ({ name: s, labels: { version: s } })) },
  });

  it("names every port × subset of any DestinationRule that may apply (other namespaces', wildcards), in every spelling", () => {
    const { source, push } = setup();
    source.add(se('a', { app: 'a' }));
    source.add(se('b', { app: 'b' }));
    source.add(dr('a', 'default', 'a', ['v1']));
    source.add(dr('a-other', 'other', A, ['v2']));
    source.add(dr('wild', 'default', '*.default.svc.cluster.local', ['canary']));
    source.add(dr('b', 'default', 'b', ['b1']));
    // A rule with a workloadSelector applies to no client's clusters; its subset is named anyway (a superset is safe).
    source.add({
      ...dr('sel', 'default', A, ['sel']),
      spec: { ...dr('sel', 'default', A, ['sel']).spec, workloadSelector: { matchLabels: { app: 'x' } } },
    });
    const names = edsNamesOfHosts(push(), new Set([A]));
    // Sidecars' and gateways' outbound and SNI-DNAT names, and a waypoint's inbound-vip ones.
    const vip = (s: string): string[] => ['http', 'tcp'].map((p) => `inbound-vip|80|${s ? `${p}/${s}` : p}|${A}`);
    const expected = ['', 'v1', 'v2', 'canary', 'sel'].flatMap((s) => [`outbound|80|${s}|${A}`, `outbound_.80_.${s}_.${A}`, ...vip(s)]);
    assert.deepEqual([...names].sort(), expected.sort());
  });

  it('only watchers of a changed name get EDS, the workload at a changed address a full push; the push carries only the changed names', () => {
    const { source, push } = setup();
    source.add(se('a', { app: 'a' }));
    source.add(se('b', { app: 'b' }));
    const names = edsNamesOfHosts(push(), new Set([A]));
    const watcher = conn([[TypeUrl.ClusterLoadAssignment, [`outbound|80||${A}`, `outbound|80||${B}`]]]);
    const other = conn([[TypeUrl.ClusterLoadAssignment, [`outbound|80||${B}`]]], {
      id: 'sidecar~2.2.2.2~o.default~default.svc.cluster.local',
    });
    const all = conn([[TypeUrl.ClusterLoadAssignment, []]], { id: 'sidecar~3.3.3.3~w.default~default.svc.cluster.local' });
    const index = new ConnectionIndex();
    for (const c of [watcher, other, all]) {
      index.add(c);
      index.watch(c, TypeUrl.ClusterLoadAssignment, c.watched(TypeUrl.ClusterLoadAssignment));
    }
    assert.ok(all.watched(TypeUrl.ClusterLoadAssignment)?.wildcard, 'an empty first EDS request is a wildcard watch');
    assert.deepEqual(
      index.endpointReach(names, new Set()),
      new Map([
        [all, 'eds'],
        [watcher, 'eds'],
      ]),
    );
    assert.deepEqual(
      index.endpointReach(names, new Set(['2.2.2.2'])),
      new Map([
        [other, 'full'],
        [all, 'eds'],
        [watcher, 'eds'],
      ]),
      "the proxy's own address serves a changed instance",
    );
    // A resubscription moves the watcher out; a closed stream is gone from the index.
    index.watch(watcher, TypeUrl.ClusterLoadAssignment, {
      ...watcher.watched(TypeUrl.ClusterLoadAssignment)!,
      names: new Set([`outbound|80||${B}`]),
    });
    index.remove(all);
    assert.deepEqual(index.endpointReach(names, new Set()), new Map());
    const w = watcher.watched(TypeUrl.ClusterLoadAssignment);
    assert.ok(w);
    const eds = pushRequest({ full: false, start: 0, edsNames: names });
    assert.deepEqual([...(edsOnlyNames(w, eds) ?? [])], [`outbound|80||${A}`]);
    assert.equal(edsOnlyNames(w, pushRequest({ full: true, start: 0 })), undefined, 'a full push sends everything watched');
  });
});

describe('push scoping: ztunnels', () => {
  const ztunnel = (): Connection =>
    conn(
      [
        [TypeUrl.Address, []],
        [TypeUrl.Authorization, []],
      ],
      { id: 'ztunnel~10.0.0.9~ztunnel-x.istio-system~istio-system.svc.cluster.local' },
    );

  it('are pushed for what the ambient index reads, not for VirtualServices or Sidecars', () => {
    const { source, push } = setup();
    source.add(se('a', { app: 'a' }));
    source.add(vs('r', 'a', 'a'));
    const old = push();
    const next = push();
    const needs = (...keys: string[]): boolean => proxyNeedsPush(ztunnel(), pushScope(req(...keys), old, next), [old, next]);
    assert.ok(!needs('VirtualService/default/r'));
    assert.ok(!needs('Sidecar/default/default'));
    assert.ok(!needs('DestinationRule/default/a'));
    assert.ok(needs('WorkloadEntry/default/w1'));
    assert.ok(needs('ServiceEntry/default/a'));
    assert.ok(needs('AuthorizationPolicy/default/deny'));
    assert.ok(needs('Ambient/default/pod-1'), 'a pod or Service change of the Kubernetes registry');
    assert.ok(needs(), 'a push that names nothing reaches everyone');
  });

  it('an Ambient registry key reaches no Envoy sidecar', () => {
    const { source, push } = setup();
    source.add(se('a', { app: 'a' }));
    const old = push();
    const next = push();
    const scope = pushScope(req('Ambient/default/pod-1'), old, next);
    assert.notEqual(scope, 'all');
    const envoy = conn(
      [
        [TypeUrl.Listener, []],
        [TypeUrl.Cluster, []],
      ],
      { id: 'sidecar~10.9.9.9~x.default~default.svc.cluster.local' },
    );
    assert.ok(!proxyNeedsPush(envoy, scope, [old, next]));
  });
});
