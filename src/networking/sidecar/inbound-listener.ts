import { create } from '@bufbuild/protobuf';
import type { Any } from '@bufbuild/protobuf/wkt';
import { TrafficDirection } from '../../gen/envoy/config/core/v3/base_pb.js';
import { ListenerSchema, type Listener } from '../../gen/envoy/config/listener/v3/listener_pb.js';
import { type Proxy, type PushContext, BLACKHOLE_CLUSTER, buildClusterName, INBOUND_PASSTHROUGH_CLUSTER } from '../../model/index.js';
import { durationFromMs } from '../common.js';
import { wasmHttpFilters, wasmSource } from '../extension/wasm-plugins.js';
import { inboundMxNetworkFilters } from '../istio-extensions.js';
import { buildHcm, HCM_FILTER, type HttpFilterInit } from '../listener/hcm.js';
import {
  httpInspector,
  MAX_CONNECTIONS_PER_SOCKET_EVENT,
  originalDst,
  socketAddress,
  tlsInspector,
  type FilterChainInit,
  type ListenerFilterInit,
} from '../listener/listener-common.js';
import { tcpProxyFilter, type FilterInit } from '../listener/tcp-proxy.js';
import { dualStackWildcards, wildcardAddress } from '../service-addresses.js';
import type { ChainVariant, InboundProtocol, MtlsMode } from '../policy/index.js';
import type { InboundPort } from './sidecar-ingress.js';
import { hcmTelemetryWithoutTracing, listenerAccessLogs, tcpTelemetry } from '../telemetry/index.js';

/** Where iptables sends a pod's inbound connections (istio-iptables `-z`). */
export const VIRTUAL_INBOUND_PORT = 15006;
export const VIRTUAL_INBOUND = 'virtualInbound';
const VIRTUAL_INBOUND_CATCHALL_HTTP = 'virtualInbound-catchall-http';
const TLS_TRANSPORT_SOCKET = 'envoy.transport_sockets.tls';

/** The security side of the inbound listener, from the workload's policies (src/networking/policy). */
export interface InboundSecurity {
  /** PeerAuthentication mode for a workload port (the mesh/namespace/workload default when no port is given). */
  mtlsMode(port: number | undefined): MtlsMode;
  chainVariants(mode: MtlsMode, protocol: InboundProtocol): readonly ChainVariant[];
  /** The mTLS DownstreamTlsContext of an HTTP or a TCP chain (they offer different ALPNs). */
  tlsContext(protocol: 'http' | 'tcp'): Any;
  /** jwt_authn and RBAC filters, in the order they run before the router. */
  httpFilters(): readonly HttpFilterInit[];
  /** RBAC network filters for TCP chains on `port`. */
  networkFilters(port: number): readonly FilterInit[];
}

export interface InboundContext {
  readonly push: PushContext;
  readonly proxy: Proxy;
  /** The workload's inbound ports (from its service instances or its Sidecar's ingress listeners). */
  readonly ports: readonly InboundPort[];
  readonly security: InboundSecurity;
}

function tlsSocket(ctx: InboundContext, http: boolean): NonNullable<FilterChainInit['transportSocket']> {
  return { name: TLS_TRANSPORT_SOCKET, configType: { case: 'typedConfig', value: ctx.security.tlsContext(http ? 'http' : 'tcp') } };
}

/** How a port's chains read: their route's tracing operation, gRPC (no retry), the service port naming the vhost, the Sidecar they come from. */
interface InboundRoute {
  readonly operation: string;
  readonly grpc: boolean;
  readonly servicePort: number;
  readonly sidecarConfig?: string;
}

/**
 * HTTP to the app: an inline route config sends everything to the inbound cluster, after
 * authn/authz, as istiod's BuildDefaultHTTPInboundRoute: no timeouts (the grpc-timeout header
 * included), and one retry of a request reset before it reached the app (never for gRPC).
 */
function httpFilters(ctx: InboundContext, cluster: string, statPrefix: string, port: number | undefined, r: InboundRoute): FilterInit[] {
  const route = {
    // istiod's name: the cluster's (InboundPassthroughCluster for the catch-all).
    name: cluster,
    virtualHosts: [
      {
        // istiod's name: the service port, 0 for the catch-all chain.
        name: `inbound|http|${r.servicePort}`,
        domains: ['*'],
        routes: [
          {
            name: 'default',
            match: { pathSpecifier: { case: 'prefix' as const, value: '/' } },
            decorator: { operation: r.operation },
            action: {
              case: 'route' as const,
              value: {
                clusterSpecifier: { case: 'cluster' as const, value: cluster },
                timeout: durationFromMs(0),
                ...(r.grpc ? {} : { retryPolicy: { retryOn: 'reset-before-request', numRetries: 2 } }),
                maxStreamDuration: { maxStreamDuration: durationFromMs(0), grpcTimeoutHeaderMax: durationFromMs(0) },
              },
            },
          },
        ],
      },
    ],
    validateClusters: false,
  };
  const phased = wasmHttpFilters(wasmSource(ctx.push), ctx.proxy, { port: port ?? 0, cls: 'SIDECAR_INBOUND' });
  const hcm = buildHcm({
    statPrefix,
    route: { inline: route },
    direction: 'inbound',
    extensions: ctx.proxy.extensions,
    leadingFilters: ctx.security.httpFilters(),
    phased,
    telemetry: hcmTelemetryWithoutTracing(ctx.push, ctx.proxy, 'inbound'),
  });
  return [...inboundMxNetworkFilters(ctx.proxy.extensions), { name: HCM_FILTER, configType: { case: 'typedConfig', value: hcm } }];
}

/** TCP to the app: metadata exchange, network RBAC, Telemetry's stats filters, then tcp_proxy (stats under the cluster's name) with its access logs. */
function tcpFilters(ctx: InboundContext, cluster: string, port: number | undefined): FilterInit[] {
  const tel = tcpTelemetry(ctx.push, ctx.proxy, 'inbound');
  return [
    ...inboundMxNetworkFilters(ctx.proxy.extensions),
    ...ctx.security.networkFilters(port ?? 0),
    ...tel.filters,
    tcpProxyFilter(cluster, { cluster }, tel.accessLog),
  ];
}

/** A workload port's chains (named `<bind>_<port>`), or the catch-all's (`port` undefined: istiod's fixed names by protocol). */
function chainsFor(
  ctx: InboundContext,
  bind: string | undefined,
  port: number | undefined,
  protocol: InboundProtocol,
  cluster: string,
  r: InboundRoute,
): FilterChainInit[] {
  const mode = ctx.security.mtlsMode(port);
  const statPrefix = port === undefined ? `${INBOUND_PASSTHROUGH_CLUSTER};` : `inbound_${bind ?? ''}_${port};`;
  return ctx.security.chainVariants(mode, protocol).map((v) => ({
    name: port === undefined ? (v.http ? VIRTUAL_INBOUND_CATCHALL_HTTP : VIRTUAL_INBOUND) : `${bind ?? ''}_${port}`,
    filterChainMatch: { ...v.match, ...(port !== undefined ? { destinationPort: port } : {}) },
    ...(v.tls ? { transportSocket: tlsSocket(ctx, v.http) } : {}),
    filters: v.http ? httpFilters(ctx, cluster, statPrefix, port, r) : tcpFilters(ctx, cluster, port),
    ...(r.sidecarConfig ? { metadata: { filterMetadata: { istio: { config: r.sidecarConfig } } } } : {}),
  }));
}

/** The wildcard address the proxy's inbound chains are named after (istiod's actualWildcards[0]). */
const wildcard = wildcardAddress;

/** Not loopback, link-local, unspecified or multicast (Go's IsGlobalUnicast; private ranges count). */
function isGlobalUnicast(ip: string): boolean {
  if (ip.includes(':')) return !/^(::1?$|fe[89ab]|ff)/i.test(ip);
  const [a = 0, b = 0] = ip.split('.').map(Number);
  return !(a === 0 || a === 127 || (a === 169 && b === 254) || a >= 224);
}

/**
 * What names a port's chains: a Sidecar ingress listener's bind, else (for one without) the
 * proxy's first global unicast IP, as istiod's getSidecarInboundBindIPs; service-derived ports the wildcard.
 */
function bindOf(proxy: Proxy, p: InboundPort): string {
  if (p.bind === undefined) return wildcard(proxy);
  return p.bind || (proxy.ipAddresses.find(isGlobalUnicast) ?? wildcard(proxy));
}

/** The predicate matching any of `ports` (istiod's listenerPredicateExcludePorts, used as filter_disabled). */
export function anyPort(ports: readonly number[]): NonNullable<ListenerFilterInit['filterDisabled']> {
  const rules = ports.map((p) => ({ rule: { case: 'destinationPortRange' as const, value: { start: p, end: p + 1 } } }));
  return rules.length === 1 ? rules[0]! : { rule: { case: 'orMatch', value: { rules } } };
}

/**
 * istiod's populateListenerFilters: original_dst, then the TLS inspector where a chain matches on
 * `tls` and the HTTP inspector where one matches on plaintext HTTP ALPNs, each disabled (or, for
 * TLS when the catch-all needs none, enabled) per destination port; port 0 stands for the catch-all.
 */
function inboundListenerFilters(chains: readonly FilterChainInit[]): ListenerFilterInit[] {
  const need = new Map<number, { tls: boolean; http: boolean }>();
  for (const c of chains) {
    const m = c.filterChainMatch;
    const port = m?.destinationPort ?? 0;
    const prev = need.get(port) ?? { tls: false, http: false };
    need.set(port, {
      tls: prev.tls || m?.transportProtocol === 'tls',
      http: prev.http || (m?.applicationProtocols ?? []).some((a) => a === 'http/1.1' || a === 'h2c'),
    });
  }
  const ports = [...need.keys()].sort((a, b) => a - b);
  const out: ListenerFilterInit[] = [originalDst()];
  if (ports.some((p) => need.get(p)!.tls)) {
    const byDefault = need.get(0)?.tls ?? false;
    const odd = ports.filter((p) => p !== 0 && need.get(p)!.tls !== byDefault);
    const tls = tlsInspector();
    if (odd.length === 0) out.push(tls);
    else out.push({ ...tls, filterDisabled: byDefault ? anyPort(odd) : { rule: { case: 'notMatch', value: anyPort(odd) } } });
  }
  if (ports.some((p) => need.get(p)!.http)) {
    const off = ports.filter((p) => !need.get(p)!.http);
    out.push(off.length === 0 ? httpInspector() : { ...httpInspector(), filterDisabled: anyPort(off) });
  }
  return out;
}

/**
 * `virtualInbound` on 15006, as istiod builds it: the original destination port picks the chain;
 * each workload port gets chains per PeerAuthentication mode (mTLS and/or plaintext, HTTP through
 * an HCM with jwt_authn + RBAC, TCP through network RBAC) to `inbound|<port>||`; any other port
 * passes through to the app under the workload's default mode; 15006 itself is a blackhole (loop).
 * HCMs carry no tracing here: the generator lays the workload's in, encoded (hcm-tracing-splice.ts).
 */
export function buildInboundListener(ctx: InboundContext): Listener {
  const filterChains: FilterChainInit[] = [
    {
      name: 'virtualInbound-blackhole',
      filterChainMatch: { destinationPort: VIRTUAL_INBOUND_PORT },
      filters: [
        ...inboundMxNetworkFilters(ctx.proxy.extensions),
        ...tcpTelemetry(ctx.push, ctx.proxy, 'inbound').filters,
        tcpProxyFilter(BLACKHOLE_CLUSTER, { cluster: BLACKHOLE_CLUSTER }),
      ],
    },
  ];
  // Ports no service declares: passed through to the app (istiod's catch-all chains, before the ports').
  filterChains.push(
    ...chainsFor(ctx, undefined, undefined, 'auto', INBOUND_PASSTHROUGH_CLUSTER, { operation: ':0/*', grpc: false, servicePort: 0 }),
  );
  for (const p of ctx.ports) {
    filterChains.push(...chainsFor(ctx, bindOf(ctx.proxy, p), p.port, p.protocol, buildClusterName('inbound', p.port, '', ''), p));
  }
  return create(ListenerSchema, {
    name: VIRTUAL_INBOUND,
    address: socketAddress(wildcardAddress(ctx.proxy), VIRTUAL_INBOUND_PORT),
    additionalAddresses: dualStackWildcards(ctx.push, ctx.proxy, VIRTUAL_INBOUND_PORT),
    trafficDirection: TrafficDirection.INBOUND,
    listenerFilters: inboundListenerFilters(filterChains),
    // No protocol-detection timeout (mesh protocolDetectionTimeout, 0s by default).
    listenerFiltersTimeout: durationFromMs(0),
    continueOnListenerFiltersTimeout: true,
    maxConnectionsToAcceptPerSocketEvent: MAX_CONNECTIONS_PER_SOCKET_EVENT,
    filterChains,
    accessLog: [...listenerAccessLogs(ctx.push, ctx.proxy, 'inbound')],
  });
}
