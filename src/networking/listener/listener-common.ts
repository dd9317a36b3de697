import type { FilterChainSchema, ListenerFilterSchema } from '../../gen/envoy/config/listener/v3/listener_components_pb.js';
import { HttpInspectorSchema } from '../../gen/envoy/extensions/filters/listener/http_inspector/v3/http_inspector_pb.js';
import { OriginalDstSchema } from '../../gen/envoy/extensions/filters/listener/original_dst/v3/original_dst_pb.js';
import { TlsInspectorSchema } from '../../gen/envoy/extensions/filters/listener/tls_inspector/v3/tls_inspector_pb.js';
import type { AddressSchema } from '../../gen/envoy/config/core/v3/address_pb.js';
import type { Protocol } from '../../registry/index.js';
import { packAny, type Init } from '../common.js';

export type FilterChainInit = Init<typeof FilterChainSchema>;
export type ListenerFilterInit = Init<typeof ListenerFilterSchema>;

export const TLS_INSPECTOR = 'envoy.filters.listener.tls_inspector';
export const HTTP_INSPECTOR = 'envoy.filters.listener.http_inspector';
export const ORIGINAL_DST = 'envoy.filters.listener.original_dst';

/** Bounds slow TLS handshakes (istiod: PILOT_GATEWAY_TRANSPORT_SOCKET_CONNECT_TIMEOUT, 15s), on every chain it builds. */
export const TRANSPORT_SOCKET_CONNECT_TIMEOUT_MS = 15_000;
/** Listeners that bind accept one connection per socket event (istiod's default), spreading them over workers. */
export const MAX_CONNECTIONS_PER_SOCKET_EVENT = 1;

/** istiod reads at most 512 bytes of a ClientHello (Envoy's default buffer is 64 KiB). */
export function tlsInspector(): ListenerFilterInit {
  return { name: TLS_INSPECTOR, configType: { case: 'typedConfig', value: packAny(TlsInspectorSchema, { initialReadBufferSize: 512 }) } };
}
export function httpInspector(): ListenerFilterInit {
  return { name: HTTP_INSPECTOR, configType: { case: 'typedConfig', value: packAny(HttpInspectorSchema, {}) } };
}
export function originalDst(): ListenerFilterInit {
  return { name: ORIGINAL_DST, configType: { case: 'typedConfig', value: packAny(OriginalDstSchema, {}) } };
}

export function socketAddress(address: string, port: number): Init<typeof AddressSchema> {
  return { address: { case: 'socketAddress', value: { address, portSpecifier: { case: 'portValue', value: port } } } };
}

/** How a listener handles a service port: HCM, TCP proxy, TLS by SNI, or sniffed (http_inspector). */
export type PortKind = 'http' | 'tcp' | 'tls' | 'auto' | 'udp';

/** Istio's protocol → listener kind, as istiod's protocol.IsHTTP / IsTCP / IsTLS / unsupported (sniffed). */
export function portKind(p: Protocol): PortKind {
  switch (p) {
    case 'HTTP':
    case 'HTTP2':
    case 'GRPC':
    case 'GRPC-WEB':
      return 'http';
    case 'HTTPS':
    case 'TLS':
      return 'tls';
    case 'TCP':
    case 'MONGO':
    case 'REDIS':
    case 'MYSQL':
      return 'tcp';
    case 'UDP':
      return 'udp';
    default:
      return 'auto';
  }
}

/** Application protocols http_inspector reports for plaintext HTTP (istiod's sniffing chain match). */
export const PLAINTEXT_HTTP_ALPNS = ['http/1.1', 'h2c'];
