import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { create, fromBinary, type JsonObject } from '@bufbuild/protobuf';
import { anyUnpack } from '@bufbuild/protobuf/wkt';
import { ClusterSchema, type Cluster } from '../../gen/envoy/config/cluster/v3/cluster_pb.js';
import { NodeSchema } from '../../gen/envoy/config/core/v3/base_pb.js';
import { ListenerSchema, type Listener } from '../../gen/envoy/config/listener/v3/listener_pb.js';
import { RBAC_Action } from '../../gen/envoy/config/rbac/v3/rbac_pb.js';
import { RBACSchema as HttpRbacSchema } from '../../gen/envoy/extensions/filters/http/rbac/v3/rbac_pb.js';
import {
  HttpConnectionManagerSchema,
  type HttpConnectionManager,
} from '../../gen/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager_pb.js';
import { DownstreamTlsContextSchema, UpstreamTlsContextSchema } from '../../gen/envoy/extensions/transport_sockets/tls/v3/tls_pb.js';
import { parseProxy, type Proxy } from '../../model/proxy.js';
import { PushContext } from '../../model/push-context.js';
import { pushRequest } from '../../model/push-request.js';
import { assertValid } from '../../xds/pgv/index.js';
import { envoyValidationRegistry } from '../../model/json-registry.js';
import { TypeUrl } from '../../xds/type-urls.js';
import { grpcClusterGenerator, grpcListenerGenerator } from './grpc-generators.js';
import { HTTP_RBAC_DENY_FILTER, INBOUND_LISTENER_PREFIX, parseInboundListenerName } from './inbound-listener.js';
import { pushOf } from '../../../test/support/config-fixture.js';

const HOST = 'echo.foo.svc.cluster.local';
const CLUSTER = `outbound|8080||${HOST}`;
const REQ = pushRequest({ full: true, start: 0 });
const pgv = envoyValidationRegistry();

const se = {
  apiVersion: 'networking.istio.io/v1',
  kind: 'ServiceEntry',
  metadata: { name: 'echo', namespace: 'foo' },
  spec: {
    hosts: [HOST],
    location: 'MESH_INTERNAL',
    resolution: 'STATIC',
    ports: [{ number: 8080, name: 'grpc', protocol: 'GRPC' }],
    workloadSelector: { labels: { app: 'echo' } },
  },
};
const we = (name: string, sa: string): JsonObject => ({
  apiVersion: 'networking.istio.io/v1',
  kind: 'WorkloadEntry',
  metadata: { name, namespace: 'foo' },
  spec: { address: '127.0.0.1', ports: { grpc: 9000 }, labels: { app: 'echo' }, serviceAccount: sa },
});
const dr = (tls: JsonObject): JsonObject => ({
  apiVersion: 'networking.istio.io/v1',
  kind: 'DestinationRule',
  metadata: { name: 'echo', namespace: 'foo' },
  spec: { host: HOST, trafficPolicy: { tls } },
});
const pa = (name: string, spec: JsonObject, namespace = 'foo'): JsonObject => ({
  apiVersion: 'security.istio.io/v1',
  kind: 'PeerAuthentication',
  metadata: { name, namespace },
  spec,
});
const ap = (name: string, spec: JsonObject, annotations: Record<string, string> = {}): JsonObject => ({
  apiVersion: 'security.istio.io/v1',
  kind: 'AuthorizationPolicy',
  metadata: { name, namespace: 'foo', annotations },
  spec,
});

function pushFor(objects: readonly JsonObject[]): PushContext {
  return pushOf(objects);
}

function proxy(labels: Record<string, string> = { app: 'echo' }): Proxy {
  const r = parseProxy(
    create(NodeSchema, {
      id: 'sidecar~127.0.0.1~echo-0.foo~foo.svc.cluster.local',
      metadata: { GENERATOR: 'grpc', NAMESPACE: 'foo', LABELS: labels },
    }),
  );
  assert.ok(r.ok);
  return r.value;
}

const watch = (typeUrl: string, names: string[]) => ({ typeUrl, names: new Set(names), wildcard: false });

function cluster(objects: readonly JsonObject[]): Cluster {
  const [res, ...rest] = grpcClusterGenerator.generate(proxy(), watch(TypeUrl.Cluster, [CLUSTER]), pushFor([se, ...objects]), REQ);
  assert.equal(rest.length, 0);
  const c = fromBinary(ClusterSchema, res!.value);
  assertValid(ClusterSchema, c, pgv);
  return c;
}

function inbound(objects: readonly JsonObject[], port = 9000, labels?: Record<string, string>): Listener {
  const name = `${INBOUND_LISTENER_PREFIX}127.0.0.1:${port}`;
  const [res, ...rest] = grpcListenerGenerator.generate(proxy(labels), watch(TypeUrl.Listener, [name]), pushFor(objects), REQ);
  assert.equal(rest.length, 0);
  const l = fromBinary(ListenerSchema, res!.value);
  assertValid(ListenerSchema, l, pgv);
  return l;
}

const hcmOf = (l: Listener): HttpConnectionManager => {
  assert.equal(l.filterChains.length, 1, 'one chain, no match: gRPC servers cannot select chains by TLS');
  const f = l.filterChains[0]!.filters[0]!;
  assert.equal(f.configType.case, 'typedConfig');
  return anyUnpack(f.configType.value!, HttpConnectionManagerSchema)!;
};
const chainOf = (l: Listener): string => l.filterChains[0]!.name;

describe('proxyless gRPC security: client clusters', () => {
  it("ISTIO_MUTUAL: certificate provider instances (current and deprecated fields) and exact SANs of the endpoints' accounts", () => {
    const c = cluster([we('a', 'echo'), we('b', 'echo-admin'), dr({ mode: 'ISTIO_MUTUAL' })]);
    assert.equal(c.transportSocket?.name, 'envoy.transport_sockets.tls');
    const up = anyUnpack(c.transportSocket!.configType.value!, UpstreamTlsContextSchema)!;
    const common = up.commonTlsContext!;
    assert.deepEqual(
      [common.tlsCertificateProviderInstance?.instanceName, common.tlsCertificateProviderInstance?.certificateName],
      ['default', 'default'],
    );
    assert.equal(common.tlsCertificateCertificateProviderInstance?.instanceName, 'default');
    assert.equal(common.tlsParams, undefined, 'gRPC rejects tls_params');
    assert.equal(common.validationContextType.case, 'combinedValidationContext');
    const combined = common.validationContextType.value!;
    const v = combined.defaultValidationContext!;
    assert.deepEqual(
      [v.caCertificateProviderInstance?.instanceName, v.caCertificateProviderInstance?.certificateName],
      ['default', 'ROOTCA'],
    );
    assert.equal(combined.validationContextCertificateProviderInstance?.certificateName, 'ROOTCA');
    assert.deepEqual(
      v.matchSubjectAltNames.map((m) => [m.matchPattern.case, m.matchPattern.value]),
      [
        ['exact', 'spiffe://cluster.local/ns/foo/sa/echo'],
        ['exact', 'spiffe://cluster.local/ns/foo/sa/echo-admin'],
      ],
    );
  });

  it("the DestinationRule's subjectAltNames replace the accounts", () => {
    const c = cluster([we('a', 'echo'), dr({ mode: 'ISTIO_MUTUAL', subjectAltNames: ['spiffe://other/ns/x/sa/y'] })]);
    const up = anyUnpack(c.transportSocket!.configType.value!, UpstreamTlsContextSchema)!;
    const combined = up.commonTlsContext!.validationContextType;
    assert.equal(combined.case, 'combinedValidationContext');
    assert.deepEqual(
      combined.value!.defaultValidationContext!.matchSubjectAltNames.map((m) => m.matchPattern.value),
      ['spiffe://other/ns/x/sa/y'],
    );
  });

  it('no TLS without ISTIO_MUTUAL: no rule, DISABLE, SIMPLE (unsupported for proxyless, as in istiod); PeerAuthentication alone does not turn it on', () => {
    assert.equal(cluster([we('a', 'echo')]).transportSocket, undefined);
    assert.equal(cluster([we('a', 'echo'), pa('strict', { mtls: { mode: 'STRICT' } })]).transportSocket, undefined);
    for (const mode of ['DISABLE', 'SIMPLE']) assert.equal(cluster([we('a', 'echo'), dr({ mode })]).transportSocket, undefined, mode);
  });
});

describe('proxyless gRPC security: XdsServer inbound listeners', () => {
  it('names: <ip>:<port> and [v6]:<port> after the prefix; anything else is not an inbound listener', () => {
    assert.deepEqual(parseInboundListenerName(`${INBOUND_LISTENER_PREFIX}10.0.0.1:8080`), { host: '10.0.0.1', port: 8080 });
    assert.deepEqual(parseInboundListenerName(`${INBOUND_LISTENER_PREFIX}[::]:50051`), { host: '::', port: 50051 });
    for (const bad of [
      '10.0.0.1:8080',
      `${INBOUND_LISTENER_PREFIX}host:80`,
      `${INBOUND_LISTENER_PREFIX}1.2.3.4`,
      `${INBOUND_LISTENER_PREFIX}1.2.3.4:0`,
      `${INBOUND_LISTENER_PREFIX}1.2.3.4:65536`,
      `${INBOUND_LISTENER_PREFIX}::1:80`,
      `${INBOUND_LISTENER_PREFIX}1.2.3.4:8a`,
    ]) {
      assert.equal(parseInboundListenerName(bad), undefined, bad);
    }
    const res = grpcListenerGenerator.generate(proxy(), watch(TypeUrl.Listener, [`${INBOUND_LISTENER_PREFIX}nope`]), pushFor([]), REQ);
    assert.equal(res.length, 0);
  });

  it('STRICT: address = bound ip:port, one mTLS chain requiring client certificates, inline non-forwarding route, router last', () => {
    const l = inbound([pa('strict', { mtls: { mode: 'STRICT' } })]);
    assert.equal(l.name, `${INBOUND_LISTENER_PREFIX}127.0.0.1:9000`);
    const sa = l.address?.address.case === 'socketAddress' ? l.address.address.value : undefined;
    assert.deepEqual([sa?.address, sa?.portSpecifier.value], ['127.0.0.1', 9000]);
    assert.equal(l.defaultFilterChain, undefined);
    assert.equal(chainOf(l), 'inbound-mtls');
    const ts = l.filterChains[0]!.transportSocket!;
    assert.equal(ts.name, 'envoy.transport_sockets.tls');
    const down = anyUnpack(ts.configType.value!, DownstreamTlsContextSchema)!;
    assert.equal(down.requireClientCertificate, true);
    assert.equal(down.commonTlsContext?.tlsCertificateProviderInstance?.instanceName, 'default');
    const v = down.commonTlsContext?.validationContextType;
    assert.equal(v?.case, 'combinedValidationContext');
    assert.equal(v.value!.defaultValidationContext?.caCertificateProviderInstance?.certificateName, 'ROOTCA');
    const hcm = hcmOf(l);
    assert.equal(hcm.routeSpecifier.case, 'routeConfig');
    const vh = hcm.routeSpecifier.value!.virtualHosts[0]!;
    assert.deepEqual(vh.domains, ['*']);
    assert.equal(vh.routes[0]!.action.case, 'nonForwardingAction');
    assert.deepEqual(
      hcm.httpFilters.map((f) => f.name),
      ['envoy.filters.http.router'],
      'no policy, no RBAC filter',
    );
  });

  it('PERMISSIVE is plaintext (gRPC cannot serve both on one port), or mTLS on workloads labelled tlsMode: istio; DISABLE is plaintext', () => {
    assert.equal(chainOf(inbound([])), 'inbound-plaintext', 'no PeerAuthentication = PERMISSIVE');
    assert.equal(inbound([pa('p', { mtls: { mode: 'PERMISSIVE' } })]).filterChains[0]!.transportSocket, undefined);
    assert.equal(
      chainOf(inbound([pa('p', { mtls: { mode: 'PERMISSIVE' } })], 9000, { app: 'echo', 'security.istio.io/tlsMode': 'istio' })),
      'inbound-mtls',
    );
    assert.equal(chainOf(inbound([pa('d', { mtls: { mode: 'DISABLE' } })])), 'inbound-plaintext');
  });

  it('mesh → namespace → workload → port: the listening port picks the port-level mode', () => {
    const objects = [
      pa('mesh', { mtls: { mode: 'STRICT' } }, 'istio-system'),
      pa('echo', { selector: { matchLabels: { app: 'echo' } }, mtls: { mode: 'UNSET' }, portLevelMtls: { 9001: { mode: 'DISABLE' } } }),
    ];
    assert.equal(chainOf(inbound(objects, 9000)), 'inbound-mtls', 'UNSET inherits STRICT from the mesh');
    assert.equal(chainOf(inbound(objects, 9001)), 'inbound-plaintext');
    assert.equal(chainOf(inbound(objects, 9000, { app: 'other' })), 'inbound-mtls', 'selector does not match: mesh-wide STRICT');
  });

  it('RBAC: DENY (its own name) then ALLOW then router; AUDIT left out; principals match the peer certificate', () => {
    const l = inbound([
      ap('allow-client', {
        selector: { matchLabels: { app: 'echo' } },
        rules: [{ from: [{ source: { principals: ['cluster.local/ns/foo/sa/client'] } }] }],
      }),
      ap('deny-secret', { action: 'DENY', rules: [{ to: [{ operation: { paths: ['/echo.Echo/Secret'] } }] }] }),
      ap('audit', { action: 'AUDIT', rules: [{}] }),
    ]);
    const filters = hcmOf(l).httpFilters;
    assert.deepEqual(
      filters.map((f) => f.name),
      [HTTP_RBAC_DENY_FILTER, 'envoy.filters.http.rbac', 'envoy.filters.http.router'],
    );
    const rbac = filters.slice(0, 2).map((f) => anyUnpack(f.configType.value as never, HttpRbacSchema)!);
    assert.deepEqual(
      rbac.map((r) => r.rules?.action),
      [RBAC_Action.DENY, RBAC_Action.ALLOW],
    );
    assert.ok(
      rbac.every((r) => r.shadowRules === undefined && r.shadowRulesStatPrefix === ''),
      'gRPC has no shadow rules',
    );
    const allow = Object.values(rbac[1]!.rules!.policies)[0]!;
    assert.equal(allow.principals[0]?.identifier.case, 'andIds');
    assert.match(
      JSON.stringify(allow.principals, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v)),
      /authenticated.*ns\/foo\/sa\/client/s,
    );
  });

  it('RBAC: a dry-run policy is not enforced and never yields an RBAC without rules (gRPC NACKs that)', () => {
    const dry = ap('dry', { rules: [{ from: [{ source: { namespaces: ['bar'] } }] }] }, { 'istio.io/dry-run': 'true' });
    assert.deepEqual(
      hcmOf(inbound([dry])).httpFilters.map((f) => f.name),
      ['envoy.filters.http.router'],
    );
  });

  it('cached per workload view: the same name for two label sets gets each its own policy', () => {
    const objects = [ap('deny', { selector: { matchLabels: { app: 'echo' } }, action: 'DENY', rules: [{}] })];
    const push = pushFor(objects);
    const name = `${INBOUND_LISTENER_PREFIX}127.0.0.1:9000`;
    const gen = (labels: Record<string, string>): string[] => {
      const [res] = grpcListenerGenerator.generate(proxy(labels), watch(TypeUrl.Listener, [name]), push, REQ);
      return hcmOf(fromBinary(ListenerSchema, res!.value)).httpFilters.map((f) => f.name);
    };
    assert.deepEqual(gen({ app: 'echo' }), [HTTP_RBAC_DENY_FILTER, 'envoy.filters.http.router']);
    assert.deepEqual(gen({ app: 'other' }), ['envoy.filters.http.router']);
  });
});
