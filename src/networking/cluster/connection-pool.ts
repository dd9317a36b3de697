import type { Duration } from '@bufbuild/protobuf/wkt';
import {
  ConnectionPoolSettings_HTTPSettings_H2UpgradePolicy as H2Upgrade,
  type ConnectionPoolSettings,
  type ConnectionPoolSettings_TCPSettings_TcpKeepalive,
} from '../../gen/networking/v1alpha3/destination_rule_pb.js';
import type { ProxyType } from '../../model/index.js';
import type { Protocol } from '../../registry/index.js';
import type { MeshTrafficSettings } from '../traffic-policy.js';
import { defaultThresholds, type ClusterDraft, type HttpOptionsInit } from './cluster-draft.js';

const isHttp2Protocol = (p: Protocol): boolean => p === 'HTTP2' || p === 'GRPC' || p === 'GRPC-WEB';
const isHttpProtocol = (p: Protocol): boolean => p === 'HTTP' || isHttp2Protocol(p);

function httpOptions(d: ClusterDraft): HttpOptionsInit {
  return (d.http ??= {});
}

/** istiod's setH2Options: HTTP/2 to the upstream, unless something already chose the protocol. */
export function setH2Options(d: ClusterDraft): void {
  const o = httpOptions(d);
  if (o.upstreamProtocolOptions?.case !== undefined) return;
  o.upstreamProtocolOptions = { case: 'explicitHttpConfig', value: { protocolConfig: { case: 'http2ProtocolOptions', value: {} } } };
}

/** istiod's setUseDownstreamProtocol: HTTP/1 or HTTP/2 as the client spoke (keeps explicit HTTP/1 options). */
export function setUseDownstreamProtocol(d: ClusterDraft): void {
  const o = httpOptions(d);
  const u = o.upstreamProtocolOptions;
  const http1 =
    u?.case === 'explicitHttpConfig' && u.value.protocolConfig?.case === 'httpProtocolOptions' ? u.value.protocolConfig.value : {};
  o.upstreamProtocolOptions = { case: 'useDownstreamProtocolConfig', value: { httpProtocolOptions: http1, http2ProtocolOptions: {} } };
}

/**
 * istiod's setUpstreamProtocol: HTTP/2 ports get explicit HTTP/2; on sidecars an unnamed (sniffed)
 * port follows the downstream protocol. Gateways do not sniff, so they keep HTTP/1 there.
 */
export function setUpstreamProtocol(d: ClusterDraft, protocol: Protocol, proxyType: ProxyType): void {
  if (isHttp2Protocol(protocol)) {
    setH2Options(d);
    return;
  }
  if ((proxyType === 'sidecar' || proxyType === 'waypoint') && protocol === 'UNSUPPORTED') setUseDownstreamProtocol(d);
}

/** istiod's shouldH2Upgrade: the DestinationRule's h2UpgradePolicy, else the mesh's, for HTTP ports only. */
export function applyH2Upgrade(
  d: ClusterDraft,
  protocol: Protocol,
  mesh: MeshTrafficSettings,
  cp: ConnectionPoolSettings | undefined,
): void {
  const http = cp?.http;
  if (http?.useClientProtocol) return;
  if (http?.h2UpgradePolicy === H2Upgrade.UPGRADE) return setH2Options(d);
  if (http?.h2UpgradePolicy === H2Upgrade.DO_NOT_UPGRADE) return;
  if (isHttpProtocol(protocol) && mesh.h2Upgrade) setH2Options(d);
}

function setKeepalive(d: ClusterDraft, k: ConnectionPoolSettings_TCPSettings_TcpKeepalive | undefined): void {
  if (!k) return;
  // An empty tcp_keepalive already sets SO_KEEPALIVE with the OS defaults.
  d.c.upstreamConnectionOptions ??= { tcpKeepalive: {} };
  const ka = (d.c.upstreamConnectionOptions.tcpKeepalive ??= {});
  if (k.probes > 0) ka.keepaliveProbes = k.probes;
  if (k.time) ka.keepaliveTime = Number(k.time.seconds);
  if (k.interval) ka.keepaliveInterval = Number(k.interval.seconds);
}

/**
 * istiod's applyConnectionPool (also for inbound clusters): connect timeout (mesh, or tcp's),
 * circuit breakers (unset limits stay max uint32), TCP keepalive (mesh, then the rule's), and the
 * HTTP idle timeout / requests per connection / connection duration / HTTP/2 stream settings.
 * Deliberate gap: retryBudget is not applied yet.
 */
export function applyConnectionPool(d: ClusterDraft, mesh: MeshTrafficSettings, cp: ConnectionPoolSettings | undefined): void {
  const t = defaultThresholds();
  const http = cp?.http;
  const tcp = cp?.tcp;
  let idleTimeout: Duration | undefined;
  if (http) {
    if (http.http2MaxRequests > 0) t.maxRequests = http.http2MaxRequests;
    if (http.http1MaxPendingRequests > 0) t.maxPendingRequests = http.http1MaxPendingRequests;
    if (http.maxRetries > 0) t.maxRetries = http.maxRetries;
    idleTimeout = http.idleTimeout;
  }
  d.c.connectTimeout = tcp?.connectTimeout ?? mesh.connectTimeout;
  if (tcp && tcp.maxConnections > 0) t.maxConnections = tcp.maxConnections;
  idleTimeout ??= tcp?.idleTimeout;
  const maxConnectionDuration = tcp?.maxConnectionDuration;
  setKeepalive(d, mesh.tcpKeepalive);
  setKeepalive(d, tcp?.tcpKeepalive);
  d.c.circuitBreakers = { thresholds: [t] };

  const perConnection = http?.maxRequestsPerConnection ?? 0;
  const streams = http?.maxConcurrentStreams ?? 0;
  const h2Keepalive = http?.http2KeepAlive;
  if (maxConnectionDuration || idleTimeout || perConnection > 0 || streams > 0 || h2Keepalive) {
    const o = httpOptions(d);
    const common = (o.commonHttpProtocolOptions ??= {});
    if (idleTimeout) common.idleTimeout = idleTimeout;
    if (perConnection > 0) common.maxRequestsPerConnection = perConnection;
    if (maxConnectionDuration) common.maxConnectionDuration = maxConnectionDuration;
    const u = o.upstreamProtocolOptions;
    const h2 =
      u?.case === 'explicitHttpConfig' && u.value.protocolConfig?.case === 'http2ProtocolOptions'
        ? u.value.protocolConfig.value
        : undefined;
    if (h2 && streams > 0) h2.maxConcurrentStreams = streams;
    if (h2 && h2Keepalive)
      h2.connectionKeepalive = {
        ...(h2Keepalive.interval ? { interval: h2Keepalive.interval } : {}),
        ...(h2Keepalive.timeout ? { timeout: h2Keepalive.timeout } : {}),
      };
  }
  if (http?.useClientProtocol) setUseDownstreamProtocol(d);
}
