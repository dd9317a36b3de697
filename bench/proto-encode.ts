/**
 * Micro-benchmark: protobuf-es (src/gen, reflection-based) vs ts-proto (bench/proto/ts-proto-gen,
 * generated encoders) on the two hottest xDS resources: an Istio-style EDS Cluster and an HTTP
 * Listener whose HttpConnectionManager sits in an Any. Both libraries build the same content; the
 * script checks that the bytes match before timing anything.
 *
 *   npx tsx bench/proto-encode.ts [--rounds 15] [--round-ms 120]
 *
 * Regenerate the ts-proto code with bench/proto/gen-ts-proto.sh.
 */
import { parseArgs } from 'node:util';
import { availableParallelism, cpus } from 'node:os';
import { create, createRegistry, fromBinary, toBinary, toJsonString, type DescMessage, type MessageShape } from '@bufbuild/protobuf';
import { anyPack } from '@bufbuild/protobuf/wkt';

import * as es from './proto/es-imports.js';
import * as ts from './proto/ts-proto-imports.js';

// ---------------------------------------------------------------------------------------------
// Shared content (what istiod would send for reviews v1 / an outbound HTTP listener on 8080)

const CLUSTER_NAME = 'outbound|8080|v1|reviews.default.svc.cluster.local';
const SNI = 'outbound_.8080_.v1_.reviews.default.svc.cluster.local';
const SAN = 'spiffe://cluster.local/ns/default/sa/bookinfo-reviews';
const UINT32_MAX = 4294967295;
const ISTIO_METADATA = {
  config: '/apis/networking.istio.io/v1alpha3/namespaces/default/destination-rule/reviews',
  default_original_port: 8080,
  services: [{ host: 'reviews.default.svc.cluster.local', name: 'reviews', namespace: 'default' }],
  subset: 'v1',
};
const TYPE_PREFIX = 'type.googleapis.com/';

// ---------------------------------------------------------------------------------------------
// protobuf-es

function esSdsConfig() {
  return {
    configSourceSpecifier: {
      case: 'apiConfigSource' as const,
      value: {
        apiType: es.ApiConfigSource_ApiType.GRPC,
        transportApiVersion: es.ApiVersion.V3,
        grpcServices: [{ targetSpecifier: { case: 'envoyGrpc' as const, value: { clusterName: 'sds-grpc' } } }],
        setNodeOnFirstMessageOnly: true,
      },
    },
    initialFetchTimeout: {},
    resourceApiVersion: es.ApiVersion.V3,
  };
}

function esCluster(): es.Cluster {
  const tls = create(es.UpstreamTlsContextSchema, {
    commonTlsContext: {
      tlsParams: {
        tlsMinimumProtocolVersion: es.TlsParameters_TlsProtocol.TLSv1_2,
        tlsMaximumProtocolVersion: es.TlsParameters_TlsProtocol.TLSv1_3,
      },
      tlsCertificateSdsSecretConfigs: [{ name: 'default', sdsConfig: esSdsConfig() }],
      validationContextType: {
        case: 'combinedValidationContext',
        value: {
          defaultValidationContext: { matchSubjectAltNames: [{ matchPattern: { case: 'exact', value: SAN } }] },
          validationContextSdsSecretConfig: { name: 'ROOTCA', sdsConfig: esSdsConfig() },
        },
      },
      alpnProtocols: ['istio-peer-exchange', 'istio'],
    },
    sni: SNI,
  });
  return create(es.ClusterSchema, {
    name: CLUSTER_NAME,
    clusterDiscoveryType: { case: 'type', value: es.Cluster_DiscoveryType.EDS },
    edsClusterConfig: {
      edsConfig: {
        configSourceSpecifier: { case: 'ads', value: {} },
        initialFetchTimeout: {},
        resourceApiVersion: es.ApiVersion.V3,
      },
      serviceName: CLUSTER_NAME,
    },
    connectTimeout: { seconds: 10n },
    lbPolicy: es.Cluster_LbPolicy.LEAST_REQUEST,
    circuitBreakers: {
      thresholds: [
        {
          maxConnections: UINT32_MAX,
          maxPendingRequests: UINT32_MAX,
          maxRequests: UINT32_MAX,
          maxRetries: UINT32_MAX,
          trackRemaining: true,
        },
      ],
    },
    outlierDetection: {
      consecutive5xx: 5,
      interval: { seconds: 10n },
      baseEjectionTime: { seconds: 30n },
      maxEjectionPercent: 100,
      enforcingConsecutive5xx: 100,
      enforcingSuccessRate: 0,
      consecutiveGatewayFailure: 0,
      enforcingConsecutiveGatewayFailure: 0,
    },
    commonLbConfig: { localityConfigSpecifier: { case: 'localityWeightedLbConfig', value: {} } },
    metadata: { filterMetadata: { istio: ISTIO_METADATA } },
    transportSocketMatches: [
      {
        name: 'tlsMode-istio',
        match: { tlsMode: 'istio' },
        transportSocket: {
          name: 'envoy.transport_sockets.tls',
          configType: { case: 'typedConfig', value: anyPack(es.UpstreamTlsContextSchema, tls) },
        },
      },
      { name: 'tlsMode-disabled', match: {}, transportSocket: { name: 'envoy.transport_sockets.raw_buffer' } },
    ],
  });
}

function esListener(): es.Listener {
  const router = create(es.RouterSchema, {});
  const fault = create(es.HTTPFaultSchema, {
    delay: {
      faultDelaySecifier: { case: 'fixedDelay', value: { seconds: 5n } },
      percentage: { numerator: 10, denominator: es.FractionalPercent_DenominatorType.HUNDRED },
    },
  });
  const rbac = create(es.HttpRBACSchema, {
    rules: {
      action: es.RBAC_Action.ALLOW,
      policies: {
        'ns[default]-policy[reviews-viewer]-rule[0]': {
          permissions: [{ rule: { case: 'any', value: true } }],
          principals: [
            {
              identifier: {
                case: 'authenticated',
                value: {
                  principalName: {
                    matchPattern: { case: 'exact', value: 'spiffe://cluster.local/ns/default/sa/bookinfo-productpage' },
                  },
                },
              },
            },
          ],
        },
      },
    },
  });
  const hcm = create(es.HttpConnectionManagerSchema, {
    statPrefix: 'outbound_0.0.0.0_8080',
    routeSpecifier: {
      case: 'rds',
      value: {
        configSource: { configSourceSpecifier: { case: 'ads', value: {} }, initialFetchTimeout: {}, resourceApiVersion: es.ApiVersion.V3 },
        routeConfigName: '8080',
      },
    },
    httpFilters: [
      { name: 'envoy.filters.http.fault', configType: { case: 'typedConfig', value: anyPack(es.HTTPFaultSchema, fault) } },
      { name: 'envoy.filters.http.rbac', configType: { case: 'typedConfig', value: anyPack(es.HttpRBACSchema, rbac) } },
      { name: 'envoy.filters.http.router', configType: { case: 'typedConfig', value: anyPack(es.RouterSchema, router) } },
    ],
    useRemoteAddress: false,
    streamIdleTimeout: {},
    forwardClientCertDetails: es.HttpConnectionManager_ForwardClientCertDetails.APPEND_FORWARD,
    setCurrentClientCertDetails: { subject: true, dns: true, uri: true },
    upgradeConfigs: [{ upgradeType: 'websocket' }],
    normalizePath: true,
    pathWithEscapedSlashesAction: es.HttpConnectionManager_PathWithEscapedSlashesAction.KEEP_UNCHANGED,
  });
  return create(es.ListenerSchema, {
    name: '0.0.0.0_8080',
    address: {
      address: { case: 'socketAddress', value: { address: '0.0.0.0', portSpecifier: { case: 'portValue', value: 8080 } } },
    },
    filterChains: [
      {
        filterChainMatch: { transportProtocol: 'raw_buffer', applicationProtocols: ['http/1.1', 'h2c'] },
        filters: [
          {
            name: 'envoy.filters.network.http_connection_manager',
            configType: { case: 'typedConfig', value: anyPack(es.HttpConnectionManagerSchema, hcm) },
          },
        ],
        name: '0.0.0.0_8080',
      },
    ],
    listenerFilters: [
      {
        name: 'envoy.filters.listener.tls_inspector',
        configType: { case: 'typedConfig', value: anyPack(es.TlsInspectorSchema, create(es.TlsInspectorSchema)) },
      },
      {
        name: 'envoy.filters.listener.http_inspector',
        configType: { case: 'typedConfig', value: anyPack(es.HttpInspectorSchema, create(es.HttpInspectorSchema)) },
      },
    ],
    listenerFiltersTimeout: {},
    continueOnListenerFiltersTimeout: true,
    trafficDirection: es.TrafficDirection.OUTBOUND,
    bindToPort: false,
  });
}

// ---------------------------------------------------------------------------------------------
// ts-proto (plain objects + generated encode/decode; Any is packed by hand)

function tsPack<T>(typeName: string, fns: ts.MessageFns<T>, msg: T): ts.Any {
  return { typeUrl: TYPE_PREFIX + typeName, value: fns.encode(msg).finish() };
}

function tsSdsConfig() {
  return {
    apiConfigSource: {
      apiType: ts.ApiConfigSource_ApiType.GRPC,
      transportApiVersion: ts.ApiVersion.V3,
      grpcServices: [{ envoyGrpc: { clusterName: 'sds-grpc' } }],
      setNodeOnFirstMessageOnly: true,
    },
    initialFetchTimeout: { seconds: 0, nanos: 0 },
    resourceApiVersion: ts.ApiVersion.V3,
  };
}

function tsCluster(): ts.Cluster {
  const tls = ts.UpstreamTlsContext.fromPartial({
    commonTlsContext: {
      tlsParams: {
        tlsMinimumProtocolVersion: ts.TlsParameters_TlsProtocol.TLSv1_2,
        tlsMaximumProtocolVersion: ts.TlsParameters_TlsProtocol.TLSv1_3,
      },
      tlsCertificateSdsSecretConfigs: [{ name: 'default', sdsConfig: tsSdsConfig() }],
      combinedValidationContext: {
        defaultValidationContext: { matchSubjectAltNames: [{ exact: SAN }] },
        validationContextSdsSecretConfig: { name: 'ROOTCA', sdsConfig: tsSdsConfig() },
      },
      alpnProtocols: ['istio-peer-exchange', 'istio'],
    },
    sni: SNI,
  });
  return ts.Cluster.fromPartial({
    name: CLUSTER_NAME,
    type: ts.Cluster_DiscoveryType.EDS,
    edsClusterConfig: {
      edsConfig: { ads: {}, initialFetchTimeout: { seconds: 0, nanos: 0 }, resourceApiVersion: ts.ApiVersion.V3 },
      serviceName: CLUSTER_NAME,
    },
    connectTimeout: { seconds: 10, nanos: 0 },
    lbPolicy: ts.Cluster_LbPolicy.LEAST_REQUEST,
    circuitBreakers: {
      thresholds: [
        {
          maxConnections: UINT32_MAX,
          maxPendingRequests: UINT32_MAX,
          maxRequests: UINT32_MAX,
          maxRetries: UINT32_MAX,
          trackRemaining: true,
        },
      ],
    },
    outlierDetection: {
      consecutive5xx: 5,
      interval: { seconds: 10, nanos: 0 },
      baseEjectionTime: { seconds: 30, nanos: 0 },
      maxEjectionPercent: 100,
      enforcingConsecutive5xx: 100,
      enforcingSuccessRate: 0,
      consecutiveGatewayFailure: 0,
      enforcingConsecutiveGatewayFailure: 0,
    },
    commonLbConfig: { localityWeightedLbConfig: {} },
    metadata: { filterMetadata: { istio: ISTIO_METADATA } },
    transportSocketMatches: [
      {
        name: 'tlsMode-istio',
        match: { tlsMode: 'istio' },
        transportSocket: {
          name: 'envoy.transport_sockets.tls',
          typedConfig: tsPack('envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext', ts.UpstreamTlsContext, tls),
        },
      },
      { name: 'tlsMode-disabled', match: {}, transportSocket: { name: 'envoy.transport_sockets.raw_buffer' } },
    ],
  });
}

function tsListener(): ts.Listener {
  const router = ts.Router.fromPartial({});
  const fault = ts.HTTPFault.fromPartial({
    delay: {
      fixedDelay: { seconds: 5, nanos: 0 },
      percentage: { numerator: 10, denominator: ts.FractionalPercent_DenominatorType.HUNDRED },
    },
  });
  const rbac = ts.HttpRBAC.fromPartial({
    rules: {
      action: ts.RBAC_Action.ALLOW,
      policies: {
        'ns[default]-policy[reviews-viewer]-rule[0]': {
          permissions: [{ any: true }],
          principals: [{ authenticated: { principalName: { exact: 'spiffe://cluster.local/ns/default/sa/bookinfo-productpage' } } }],
        },
      },
    },
  });
  const hcm = ts.HttpConnectionManager.fromPartial({
    statPrefix: 'outbound_0.0.0.0_8080',
    rds: {
      configSource: { ads: {}, initialFetchTimeout: { seconds: 0, nanos: 0 }, resourceApiVersion: ts.ApiVersion.V3 },
      routeConfigName: '8080',
    },
    httpFilters: [
      { name: 'envoy.filters.http.fault', typedConfig: tsPack('envoy.extensions.filters.http.fault.v3.HTTPFault', ts.HTTPFault, fault) },
      { name: 'envoy.filters.http.rbac', typedConfig: tsPack('envoy.extensions.filters.http.rbac.v3.RBAC', ts.HttpRBAC, rbac) },
      { name: 'envoy.filters.http.router', typedConfig: tsPack('envoy.extensions.filters.http.router.v3.Router', ts.Router, router) },
    ],
    useRemoteAddress: false,
    streamIdleTimeout: { seconds: 0, nanos: 0 },
    forwardClientCertDetails: ts.HttpConnectionManager_ForwardClientCertDetails.APPEND_FORWARD,
    setCurrentClientCertDetails: { subject: true, dns: true, uri: true },
    upgradeConfigs: [{ upgradeType: 'websocket' }],
    normalizePath: true,
    pathWithEscapedSlashesAction: ts.HttpConnectionManager_PathWithEscapedSlashesAction.KEEP_UNCHANGED,
  });
  return ts.Listener.fromPartial({
    name: '0.0.0.0_8080',
    address: { socketAddress: { address: '0.0.0.0', portValue: 8080 } },
    filterChains: [
      {
        filterChainMatch: { transportProtocol: 'raw_buffer', applicationProtocols: ['http/1.1', 'h2c'] },
        filters: [
          {
            name: 'envoy.filters.network.http_connection_manager',
            typedConfig: tsPack(
              'envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager',
              ts.HttpConnectionManager,
              hcm,
            ),
          },
        ],
        name: '0.0.0.0_8080',
      },
    ],
    listenerFilters: [
      {
        name: 'envoy.filters.listener.tls_inspector',
        typedConfig: tsPack(
          'envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector',
          ts.TlsInspector,
          ts.TlsInspector.fromPartial({}),
        ),
      },
      {
        name: 'envoy.filters.listener.http_inspector',
        typedConfig: tsPack(
          'envoy.extensions.filters.listener.http_inspector.v3.HttpInspector',
          ts.HttpInspector,
          ts.HttpInspector.fromPartial({}),
        ),
      },
    ],
    listenerFiltersTimeout: { seconds: 0, nanos: 0 },
    continueOnListenerFiltersTimeout: true,
    trafficDirection: ts.TrafficDirection.OUTBOUND,
    bindToPort: false,
  });
}

// ---------------------------------------------------------------------------------------------
// Harness

interface Case {
  readonly message: string;
  readonly op: string;
  readonly lib: 'protobuf-es' | 'ts-proto';
  readonly fn: () => unknown;
}

interface Stat {
  /** Median over rounds. */
  readonly nsPerOp: number;
  /** Fastest round: the least disturbed by other processes on a shared machine. */
  readonly bestNsPerOp: number;
  readonly opsPerSec: number;
  /** (max - min) / median of the per-round ns/op. */
  readonly spread: number;
}

// Results flow into this so the JIT cannot drop the measured work.
let sink = 0;
function consume(v: unknown): void {
  if (v instanceof Uint8Array) sink += v.length;
  else if (v !== null && typeof v === 'object') sink += 1;
}

function runBatch(fn: () => unknown, n: number): number {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) consume(fn());
  return Number(process.hrtime.bigint() - t0);
}

/** Warm-up, then size each case's batch so one batch takes about roundMs. */
function calibrate(fn: () => unknown, roundMs: number): number {
  const warmEnd = Date.now() + Math.max(200, roundMs);
  while (Date.now() < warmEnd) runBatch(fn, 64);
  const target = roundMs * 1e6;
  // Grow the batch until it runs long enough to time, then scale it to the target.
  for (let n = 64; ; n *= 2) {
    const t = runBatch(fn, n);
    if (t >= target / 4) return Math.max(1, Math.round((n * target) / t));
  }
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

function measureAll(cases: readonly Case[], rounds: number, roundMs: number): Map<Case, Stat> {
  const sizes = new Map(cases.map((c) => [c, calibrate(c.fn, roundMs)]));
  const samples = new Map<Case, number[]>(cases.map((c) => [c, []]));
  // Round-robin across cases so drift (GC heap growth, thermal) spreads evenly over libraries.
  for (let r = 0; r < rounds; r++) {
    for (const c of cases) {
      const n = sizes.get(c)!;
      samples.get(c)!.push(runBatch(c.fn, n) / n);
    }
  }
  const out = new Map<Case, Stat>();
  for (const c of cases) {
    const xs = samples.get(c)!;
    const med = median(xs);
    out.set(c, { nsPerOp: med, bestNsPerOp: Math.min(...xs), opsPerSec: 1e9 / med, spread: (Math.max(...xs) - Math.min(...xs)) / med });
  }
  return out;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

// Every type packed in an Any above, so the content check compares what is inside them too.
const ANY_TYPES = createRegistry(
  es.UpstreamTlsContextSchema,
  es.HttpConnectionManagerSchema,
  es.RouterSchema,
  es.HTTPFaultSchema,
  es.HttpRBACSchema,
  es.TlsInspectorSchema,
  es.HttpInspectorSchema,
);

function checkSame<D extends DescMessage>(
  label: string,
  schema: D,
  esMsg: MessageShape<D>,
  esBytes: Uint8Array,
  tsBytes: Uint8Array,
): string {
  // The libraries must encode the same content, or the comparison means nothing.
  const a = toJsonString(schema, esMsg, { registry: ANY_TYPES });
  const b = toJsonString(schema, fromBinary(schema, tsBytes), { registry: ANY_TYPES });
  if (a !== b) throw new Error(`${label}: ts-proto bytes decode to different content`);
  if (sameBytes(esBytes, tsBytes)) return 'identical bytes';
  // protobuf-es writes fields in field-number order, ts-proto in .proto declaration order.
  return esBytes.length === tsBytes.length ? 'same content and size, field order differs' : `same content, ts-proto ${tsBytes.length} B`;
}

const fmtInt = (n: number): string => Math.round(n).toLocaleString('en-US');
const fmtNs = (n: number): string => (n >= 100 ? fmtInt(n) : n.toFixed(1));

function main(): void {
  const { values } = parseArgs({
    options: { rounds: { type: 'string', default: '15' }, 'round-ms': { type: 'string', default: '120' } },
  });
  const rounds = Number(values.rounds);
  const roundMs = Number(values['round-ms']);

  const esC = esCluster();
  const esL = esListener();
  const tsC = tsCluster();
  const tsL = tsListener();
  const esCBytes = toBinary(es.ClusterSchema, esC);
  const esLBytes = toBinary(es.ListenerSchema, esL);
  const tsCBytes = ts.Cluster.encode(tsC).finish();
  const tsLBytes = ts.Listener.encode(tsL).finish();
  const clusterCheck = checkSame('Cluster', es.ClusterSchema, esC, esCBytes, tsCBytes);
  const listenerCheck = checkSame('Listener', es.ListenerSchema, esL, esLBytes, tsLBytes);

  const cases: Case[] = [
    { message: 'Cluster', op: 'encode', lib: 'protobuf-es', fn: () => toBinary(es.ClusterSchema, esC) },
    { message: 'Cluster', op: 'encode', lib: 'ts-proto', fn: () => ts.Cluster.encode(tsC).finish() },
    { message: 'Cluster', op: 'build+encode', lib: 'protobuf-es', fn: () => toBinary(es.ClusterSchema, esCluster()) },
    { message: 'Cluster', op: 'build+encode', lib: 'ts-proto', fn: () => ts.Cluster.encode(tsCluster()).finish() },
    { message: 'Cluster', op: 'decode', lib: 'protobuf-es', fn: () => fromBinary(es.ClusterSchema, esCBytes) },
    { message: 'Cluster', op: 'decode', lib: 'ts-proto', fn: () => ts.Cluster.decode(tsCBytes) },
    { message: 'Listener+HCM', op: 'encode', lib: 'protobuf-es', fn: () => toBinary(es.ListenerSchema, esL) },
    { message: 'Listener+HCM', op: 'encode', lib: 'ts-proto', fn: () => ts.Listener.encode(tsL).finish() },
    { message: 'Listener+HCM', op: 'build+encode', lib: 'protobuf-es', fn: () => toBinary(es.ListenerSchema, esListener()) },
    { message: 'Listener+HCM', op: 'build+encode', lib: 'ts-proto', fn: () => ts.Listener.encode(tsListener()).finish() },
    { message: 'Listener+HCM', op: 'decode', lib: 'protobuf-es', fn: () => fromBinary(es.ListenerSchema, esLBytes) },
    { message: 'Listener+HCM', op: 'decode', lib: 'ts-proto', fn: () => ts.Listener.decode(tsLBytes) },
  ];

  console.log(`proto-encode: node ${process.version}, ${cpus()[0]?.model ?? 'cpu'} x${availableParallelism()}`);
  console.log(`rounds=${rounds} round≈${roundMs}ms; ns/op = median of rounds, best = fastest round, ± = (max-min)/median`);
  console.log(`Cluster ${esCBytes.length} B (${clusterCheck}); Listener ${esLBytes.length} B (${listenerCheck})`);
  console.log('encode = message → bytes; build+encode = construct + pack Any + encode; decode = bytes → message (Any left packed)');
  console.log('');

  const t0 = Date.now();
  const stats = measureAll(cases, rounds, roundMs);
  const header = [
    'message',
    'op',
    'es ns/op',
    'es best',
    'es ops/s',
    'es ±',
    'ts ns/op',
    'ts best',
    'ts ops/s',
    'ts ±',
    'es/ts',
    'best es/ts',
  ];
  const rows: string[][] = [];
  for (let i = 0; i < cases.length; i += 2) {
    const a = cases[i]!;
    const b = cases[i + 1]!;
    const sa = stats.get(a)!;
    const sb = stats.get(b)!;
    const lib = (x: Stat): string[] => [fmtNs(x.nsPerOp), fmtNs(x.bestNsPerOp), fmtInt(x.opsPerSec), `${(x.spread * 100).toFixed(0)}%`];
    rows.push([
      a.message,
      a.op,
      ...lib(sa),
      ...lib(sb),
      `${(sa.nsPerOp / sb.nsPerOp).toFixed(2)}x`,
      `${(sa.bestNsPerOp / sb.bestNsPerOp).toFixed(2)}x`,
    ]);
  }
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]): string =>
    cells.map((c, i) => (i < 2 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  console.log(line(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const r of rows) console.log(line(r));
  console.log('');
  console.log(`measured in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  console.log('es = protobuf-es, ts = ts-proto; es/ts = protobuf-es ns/op ÷ ts-proto ns/op (above 1x: protobuf-es is slower)');
  if (sink < 0) console.log(sink); // keeps `sink` observable
}

main();
