import { isIP } from 'node:net';
import type { FilterChain } from '../gen/envoy/config/listener/v3/listener_components_pb.js';
import type { Listener } from '../gen/envoy/config/listener/v3/listener_pb.js';
import { RBACSchema as NetworkRbacSchema } from '../gen/envoy/extensions/filters/network/rbac/v3/rbac_pb.js';
import { HttpConnectionManagerSchema } from '../gen/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager_pb.js';
import { SniClusterSchema } from '../gen/envoy/extensions/filters/network/sni_cluster/v3/sni_cluster_pb.js';
import { TcpProxySchema, type TcpProxy } from '../gen/envoy/extensions/filters/network/tcp_proxy/v3/tcp_proxy_pb.js';
import { DownstreamTlsContextSchema } from '../gen/envoy/extensions/transport_sockets/tls/v3/tls_pb.js';
import { resolveCluster } from './cluster.js';
import type { Connection, Downstream } from './context.js';
import { handleHttp, originalDestination } from './http.js';
import { hasListenerFilter, matchFilterChain, selectListener, type CallMode } from './listener-match.js';
import { anyTypeName, unpack } from './matchers.js';
import { evaluateRbac } from './rbac.js';
import { stripPort } from './route-match.js';
import type { SimRequest, SimResult, SimulationConfig } from './types.js';

/** ALPN a client offers inside TLS: Istio's client sidecar marks mesh mTLS with `istio*` values. */
function offeredAlpn(req: SimRequest, tls: 'none' | 'mtls' | 'tls'): readonly string[] {
  if (req.alpn) return req.alpn;
  if (tls === 'mtls')
    return req.protocol === 'http' ? ['istio-http/1.1'] : req.protocol === 'http2' ? ['istio-h2'] : ['istio-peer-exchange', 'istio'];
  if (tls === 'tls') return req.protocol === 'http' ? ['http/1.1'] : req.protocol === 'http2' ? ['h2'] : [];
  return [];
}

/** Host header a client would send: the address, with the port unless it is the scheme's default. */
function defaultAuthority(req: SimRequest, tls: string): string {
  const host = isIP(req.address) === 6 ? `[${req.address}]` : req.address;
  const defaultPort = tls === 'none' ? 80 : 443;
  return req.port === defaultPort ? host : `${host}:${req.port}`;
}

const hostHeader = (req: SimRequest): string | undefined =>
  Object.entries(req.headers ?? {}).find(([k]) => k.toLowerCase() === 'host' || k === ':authority')?.[1];

/** What the listener filters learn: TLS, SNI and ALPN need tls_inspector; plaintext ALPN needs http_inspector. */
function downstream(l: Listener, req: SimRequest, tls: 'none' | 'mtls' | 'tls', port: number, authority: string): Downstream {
  const tlsInspector = hasListenerFilter(l, 'tls_inspector', port);
  const httpInspector = hasListenerFilter(l, 'http_inspector', port);
  const host = stripPort(authority);
  // Clients send no SNI for IP literals (RFC 6066).
  const sni =
    req.sni ??
    (tls === 'tls' && isIP(host.replace(/^\[|\]$/g, '')) === 0 && (req.authority ?? hostHeader(req)) !== undefined ? host : undefined);
  let alpn: readonly string[] = [];
  if (tls !== 'none' && tlsInspector) alpn = offeredAlpn(req, tls);
  if (tls === 'none' && httpInspector) alpn = req.protocol === 'http' ? ['http/1.1'] : req.protocol === 'http2' ? ['h2c'] : [];
  return {
    dstIp: req.address,
    dstPort: port,
    srcIp: req.callerIp,
    srcPort: req.callerPort,
    transportProtocol: tls !== 'none' && tlsInspector ? 'tls' : 'raw_buffer',
    sni: tls !== 'none' && tlsInspector ? sni : undefined,
    alpn,
    tls,
    protocol: req.protocol,
  };
}

/**
 * The chain's downstream TLS: a plaintext client fails the handshake; Istio mTLS (workload cert
 * from SDS `default`) needs a peer with a mesh client certificate, and a mesh peer rejects any
 * other server certificate.
 */
function terminate(chain: FilterChain, d: Downstream, req: SimRequest): { conn?: Connection; error?: string } {
  const ts = chain.transportSocket;
  const ctx = ts?.configType.case === 'typedConfig' ? unpack(ts.configType.value, DownstreamTlsContextSchema) : undefined;
  if (!ctx) return { conn: { ...d, tlsTerminated: false, peerCertificate: false, peerPrincipal: undefined } };
  if (d.tls === 'none') return { error: 'tls handshake failed: plaintext sent to a TLS filter chain' };
  const meshCert = ctx.commonTlsContext?.tlsCertificateSdsSecretConfigs[0]?.name === 'default';
  if (ctx.requireClientCertificate === true && d.tls !== 'mtls')
    return { error: 'invalid mTLS: the filter chain requires a client certificate' };
  if (d.tls === 'mtls' && !meshCert) return { error: 'invalid mTLS: the server certificate is not a mesh identity' };
  const peer = d.tls === 'mtls';
  return { conn: { ...d, tlsTerminated: true, peerCertificate: peer, peerPrincipal: peer ? req.callerPrincipal : undefined } };
}

function handleTcp(config: SimulationConfig, tcp: TcpProxy, conn: Connection, r: SimResult, sniCluster: string | undefined): void {
  const spec = tcp.clusterSpecifier;
  let cluster: string;
  if (sniCluster !== undefined) cluster = sniCluster;
  else if (spec.case === 'cluster') cluster = spec.value;
  else if (spec.case === 'weightedClusters') {
    r.weights = spec.value.clusters.map((c) => ({ cluster: c.name, weight: c.weight }));
    cluster = r.weights.reduce((best, c) => (c.weight > best.weight ? c : best), r.weights[0] ?? { cluster: '', weight: 0 }).cluster;
  } else {
    r.error = 'tcp_proxy without a cluster';
    return;
  }
  r.cluster = cluster;
  Object.assign(r, resolveCluster(config, cluster, originalDestination(conn)));
}

function runNetworkFilters(
  config: SimulationConfig,
  req: SimRequest,
  chain: FilterChain,
  conn: Connection,
  authority: string,
  r: SimResult,
  warn: (m: string) => void,
): void {
  let sniCluster: string | undefined;
  r.rbac = 'none';
  for (const f of chain.filters) {
    if (f.configType.case !== 'typedConfig') {
      warn(`network filter ${f.name}: config discovery is not modelled (skipped)`);
      continue;
    }
    const any = f.configType.value;
    switch (anyTypeName(any)) {
      case NetworkRbacSchema.typeName: {
        const cfg = unpack(any, NetworkRbacSchema)!;
        if (!cfg.rules) {
          if (cfg.matcher) warn('network rbac: matcher-based RBAC is not modelled (allowed)');
          break;
        }
        const d = evaluateRbac(cfg.rules, { conn, http: undefined, warn });
        if (!d.enforced) break;
        if (d.policy !== undefined) r.rbacPolicy = d.policy;
        if (!d.allowed) {
          r.rbac = 'deny';
          r.error = 'rbac: connection denied';
          return;
        }
        r.rbac = 'allow';
        break;
      }
      case SniClusterSchema.typeName:
        sniCluster = conn.sni ?? '';
        break;
      case TcpProxySchema.typeName:
        handleTcp(config, unpack(any, TcpProxySchema)!, conn, r, sniCluster);
        return;
      case HttpConnectionManagerSchema.typeName:
        handleHttp({ config, req, conn, authority, result: r, warn }, unpack(any, HttpConnectionManagerSchema)!);
        return;
      default:
        break; // stats, metadata exchange and other filters that do not decide where traffic goes
    }
  }
  r.error = 'filter chain has no terminal network filter';
}

function run(config: SimulationConfig, req: SimRequest, r: SimResult, warn: (m: string) => void): void {
  const tls = req.tls ?? 'none';
  if (tls === 'none' && req.alpn && req.alpn.length > 0) {
    r.error = 'invalid request: ALPN is only sent in TLS';
    return;
  }
  const mode: CallMode = req.callMode ?? (req.listenerPort !== undefined ? 'gateway' : 'outbound');
  const pick = selectListener(config.listeners, mode, req.address, req.port, req.listenerPort);
  if (!pick.listener) {
    r.error = pick.error ?? 'no listener';
    return;
  }
  const l = pick.listener;
  r.listener = l.name;
  const authority = req.authority ?? hostHeader(req) ?? defaultAuthority(req, tls);
  const d = downstream(l, req, tls, pick.port, authority);
  const fc = matchFilterChain(l, d);
  if (!fc.chain) {
    r.error = fc.error ?? 'no matching filter chain';
    return;
  }
  r.filterChain = fc.name!;
  const t = terminate(fc.chain, d, req);
  if (!t.conn) {
    r.error = t.error!;
    return;
  }
  r.tlsTerminated = t.conn.tlsTerminated;
  runNetworkFilters(config, req, fc.chain, t.conn, authority, r, warn);
}

/**
 * Where Envoy would send one connection / request given the config a proxy received: listener
 * (capture and original-destination hand-off), filter chain, network filters (RBAC, tcp_proxy,
 * HCM), HTTP filters (jwt_authn, RBAC, fault), route and cluster, endpoint and upstream TLS.
 */
export function simulate(config: SimulationConfig, req: SimRequest): SimResult {
  const r: SimResult = {};
  const warnings: string[] = [];
  run(config, req, r, (m) => {
    if (!warnings.includes(m)) warnings.push(m);
  });
  if (warnings.length > 0) r.warnings = warnings;
  return r;
}
