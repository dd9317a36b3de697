import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { create, fromBinary } from '@bufbuild/protobuf';
import { anyUnpack } from '@bufbuild/protobuf/wkt';
import { MemorySource } from '../../config/sources/memory-source.js';
import { ConfigStore } from '../../config/store.js';
import { NodeSchema } from '../../gen/envoy/config/core/v3/base_pb.js';
import { ListenerSchema } from '../../gen/envoy/config/listener/v3/listener_pb.js';
import { HttpConnectionManagerSchema } from '../../gen/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager_pb.js';
import { changeSet } from '../../model/dependency-tokens.js';
import { defaultMeshConfig } from '../../config/mesh/mesh-config.js';
import { parseProxy, type Proxy } from '../../model/proxy.js';
import { PushContext } from '../../model/push-context.js';
import { pushRequest } from '../../model/push-request.js';
import { silentLogger } from '../../util/log.js';
import { Connection } from '../../xds/connection.js';
import { GeneratorRegistry } from '../../xds/generator.js';
import { proxyNeedsPush, pushScope } from '../../xds/push-scope.js';
import type { XdsResource } from '../../xds/resource.js';
import { TypeUrl } from '../../xds/type-urls.js';
import { XdsCache } from '../../model/xds-cache.js';
import { registerEnvoyGenerators } from '../envoy-generators.js';
import { configCredentials } from '../gateway/config-credentials.js';

const se = (name: string, ns: string, ip: string, labels: Record<string, string>) => ({
  apiVersion: 'networking.istio.io/v1',
  kind: 'ServiceEntry',
  metadata: { name, namespace: ns },
  spec: {
    hosts: [`${name}.${ns}.svc.cluster.local`],
    location: 'MESH_INTERNAL',
    resolution: 'STATIC',
    ports: [{ number: 80, name: 'http', protocol: 'HTTP' }],
    endpoints: [{ address: ip, labels }],
  },
});
const telemetry = (name: string, ns: string, spec: Record<string, unknown>) => ({
  apiVersion: 'telemetry.istio.io/v1',
  kind: 'Telemetry',
  metadata: { name, namespace: ns },
  spec,
});
const logs = { accessLogging: [{ providers: [{ name: 'envoy' }] }] };

function proxy(ns: string, ip: string, labels: Record<string, string>): Proxy {
  const p = parseProxy(create(NodeSchema, { id: `sidecar~${ip}~w-1.${ns}~${ns}.svc.cluster.local`, metadata: { LABELS: labels } }));
  assert.ok(p.ok);
  return p.value;
}

const A = proxy('ns-a', '10.0.0.1', { app: 'a' });
const A2 = proxy('ns-a', '10.0.0.2', { app: 'a2' });
const B = proxy('ns-b', '10.0.0.3', { app: 'b' });

function setup() {
  const store = new ConfigStore();
  const source = new MemorySource();
  void source.start(store);
  source.add(se('a', 'ns-a', '10.0.0.1', { app: 'a' }));
  source.add(se('a2', 'ns-a', '10.0.0.2', { app: 'a2' }));
  source.add(se('b', 'ns-b', '10.0.0.3', { app: 'b' }));
  const cache = new XdsCache();
  const generators = registerEnvoyGenerators(new GeneratorRegistry(), {
    logger: silentLogger,
    credentials: (p) => configCredentials(p.config, silentLogger),
  });
  let n = 0;
  let last: PushContext | undefined;
  const push = (): PushContext =>
    (last = new PushContext({
      version: `v${++n}`,
      mesh: defaultMeshConfig(),
      config: store.snapshot(),
      cache,
      ...(last ? { previous: last } : {}),
    }));
  const lds = (p: PushContext, who: Proxy): readonly XdsResource[] =>
    generators
      .lookup(who, TypeUrl.Listener)!
      .generate(who, { typeUrl: TypeUrl.Listener, names: new Set(), wildcard: true } as never, p, pushRequest({ full: true, start: 0 }));
  /** The access log file paths of the inbound HTTP chain of `who`'s virtualInbound. */
  const inboundLogs = (p: PushContext, who: Proxy): string[] => {
    const l = lds(p, who)
      .map((r) => fromBinary(ListenerSchema, r.value))
      .find((x) => x.name === 'virtualInbound')!;
    const fc = l.filterChains.find(
      (c) =>
        c.filterChainMatch?.destinationPort === 80 &&
        c.filters[0]?.configType.case === 'typedConfig' &&
        c.filters.some((f) => f.name.includes('http_connection_manager')),
    )!;
    const f = fc.filters.find((x) => x.name.includes('http_connection_manager'))!;
    const hcm = anyUnpack(f.configType.value as never, HttpConnectionManagerSchema)!;
    return hcm.accessLog.map((a) => a.name);
  };
  return { source, push, lds, inboundLogs, cache };
}

describe('Telemetry change handling', () => {
  it('resolves root namespace → namespace → workload; a namespace Telemetry pushes that namespace, a selector one only the workloads it selects (before or after)', () => {
    const { source, push, inboundLogs } = setup();
    const p0 = push();
    assert.deepEqual(inboundLogs(p0, A), []);
    source.add(telemetry('mesh', 'istio-system', logs));
    const p1 = push();
    assert.deepEqual([inboundLogs(p1, A), inboundLogs(p1, B)], [['envoy.access_loggers.file'], ['envoy.access_loggers.file']]);
    // Root namespace: every proxy.
    const rootScope = pushScope(pushRequest({ full: true, configsUpdated: ['Telemetry/istio-system/mesh'], start: 0 }), p0, p1);
    assert.equal(rootScope, 'all');

    source.add(telemetry('off', 'ns-a', { accessLogging: [{ disabled: true }] }));
    source.add(telemetry('on-for-a', 'ns-a', { selector: { matchLabels: { app: 'a' } }, ...logs }));
    const p2 = push();
    // ns-a's namespace Telemetry turns logs off; the workload one turns them back on for app=a only.
    assert.deepEqual(
      [inboundLogs(p2, A), inboundLogs(p2, A2), inboundLogs(p2, B)],
      [['envoy.access_loggers.file'], [], ['envoy.access_loggers.file']],
    );
    const scope = pushScope(
      pushRequest({ full: true, configsUpdated: ['Telemetry/ns-a/off', 'Telemetry/ns-a/on-for-a'], start: 0 }),
      p1,
      p2,
    );
    const wildcard = (who: Proxy) => {
      const c = new Connection({ id: 'c', proxy: who, connectedAt: 0, peer: '', sink: { write: async () => {}, end: () => {} } });
      c.setWatched(TypeUrl.Listener, { typeUrl: TypeUrl.Listener, names: new Set(), wildcard: true } as never);
      return c;
    };
    assert.deepEqual(
      [A, A2, B].map((who) => proxyNeedsPush(wildcard(who), scope, [p1, p2])),
      [true, true, false],
    );

    // A selector-only change: only the workloads its old or new selector matches.
    source.update(telemetry('on-for-a', 'ns-a', { selector: { matchLabels: { app: 'a2' } }, ...logs }));
    const p3 = push();
    assert.deepEqual([inboundLogs(p3, A), inboundLogs(p3, A2)], [[], ['envoy.access_loggers.file']]);
    const selScope = pushScope(pushRequest({ full: true, configsUpdated: ['Telemetry/ns-a/on-for-a'], start: 0 }), p2, p3);
    assert.deepEqual(
      [A, A2, B].map((who) => proxyNeedsPush(wildcard(who), selScope, [p2, p3])),
      [true, true, false],
    );
    const other = proxy('ns-a', '10.0.0.9', { app: 'unrelated' });
    assert.equal(proxyNeedsPush(wildcard(other), selScope, [p2, p3]), false);
  });

  it("a namespace Telemetry change invalidates that namespace's cached listeners and keeps the others", () => {
    const { source, push, lds, cache } = setup();
    const p1 = push();
    const beforeB = lds(p1, B);
    const inbound = (p: PushContext) => lds(p, A).find((r) => r.name === 'virtualInbound')!;
    const beforeA = inbound(p1);
    source.add(telemetry('logs', 'ns-a', logs));
    const p2 = push();
    const cs = changeSet(
      pushRequest({ full: true, configsUpdated: ['Telemetry/ns-a/logs'], start: 0 }),
      p1.snapshot,
      p2.snapshot,
      'cluster.local',
      'istio-system',
    );
    assert.notEqual(cs, 'all');
    assert.ok(cache.invalidate(cs as never) > 0);
    const p3 = push();
    // ns-b's listeners come from the cache (same objects); ns-a's are rebuilt with the access log.
    assert.equal(lds(p3, B)[0], beforeB[0]);
    assert.ok(!Buffer.from(beforeA.value).includes('envoy.access_loggers.file'));
    assert.ok(Buffer.from(inbound(p3).value).includes('envoy.access_loggers.file'));
  });
});
