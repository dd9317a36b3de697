import { create, type JsonObject, type JsonValue } from '@bufbuild/protobuf';
import type { CircuitBreakers_ThresholdsSchema } from '../../gen/envoy/config/cluster/v3/circuit_breaker_pb.js';
import {
  Cluster_DiscoveryType,
  ClusterSchema,
  type Cluster,
  type ClusterSchema as ClusterSchemaType,
} from '../../gen/envoy/config/cluster/v3/cluster_pb.js';
import { ApiVersion } from '../../gen/envoy/config/core/v3/config_source_pb.js';
import { RawBufferSchema } from '../../gen/envoy/extensions/transport_sockets/raw_buffer/v3/raw_buffer_pb.js';
import { HttpProtocolOptionsSchema } from '../../gen/envoy/extensions/upstreams/http/v3/http_protocol_options_pb.js';
import type { Proxy } from '../../model/index.js';
import type { Service } from '../../registry/index.js';
import { durationFromMs, packAny, type Init } from '../common.js';
import { type LocalityGroup, toLocalityLbEndpoints } from '../endpoint/istio-endpoint.js';

export type ClusterInit = Init<typeof ClusterSchemaType>;
export type HttpOptionsInit = Init<typeof HttpProtocolOptionsSchema>;

/** Key of HttpProtocolOptions in typed_extension_protocol_options (istiod's v3.HttpProtocolOptionsType). */
export const HTTP_PROTOCOL_OPTIONS = 'envoy.extensions.upstreams.http.v3.HttpProtocolOptions';
export const TLS_TRANSPORT_SOCKET = 'envoy.transport_sockets.tls';
const RAW_BUFFER_TRANSPORT_SOCKET = 'envoy.transport_sockets.raw_buffer';
const MAX_UINT32 = 0xffffffff;

/**
 * A cluster under construction (istiod's clusterWrapper): the HttpProtocolOptions are packed only
 * at the end, and a STATIC/DNS cluster's endpoints stay as locality groups until then, so the
 * locality LB can still re-prioritise them.
 */
export interface ClusterDraft {
  readonly c: ClusterInit;
  http?: HttpOptionsInit;
  inlineEndpoints?: LocalityGroup[];
}

export function discoveryType(d: ClusterDraft): Cluster_DiscoveryType | undefined {
  const t = d.c.clusterDiscoveryType;
  return t?.case === 'type' ? t.value : undefined;
}

/** istiod's DelimitedStatsPrefix: the stat name ends in `;` so Envoy keeps `|` in it. */
export const altStatName = (name: string): string => `${name};`;

/** The `istio` filter metadata of the cluster, created on first use. */
export function istioMetadata(d: ClusterDraft): Record<string, JsonValue> {
  d.c.metadata ??= { filterMetadata: {} };
  const fm = (d.c.metadata.filterMetadata ??= {});
  return (fm.istio ??= {}) as Record<string, JsonValue>;
}

/** istiod's telemetry metadata: the services a cluster serves, for the stats filter's labels. */
export function serviceMetadata(s: Service): JsonObject {
  return { host: s.hostname, name: s.hostname, namespace: s.namespace };
}

/** istiod's getDefaultCircuitBreakerThresholds: every limit max uint32 (no remaining-capacity stats, DISABLE_TRACK_REMAINING_CB_METRICS). */
export function defaultThresholds(): Init<typeof CircuitBreakers_ThresholdsSchema> {
  return { maxRetries: MAX_UINT32, maxRequests: MAX_UINT32, maxConnections: MAX_UINT32, maxPendingRequests: MAX_UINT32 };
}

/** istiod's maybeApplyEdsConfig: EDS over ADS named like the cluster, waiting for the first answer. */
export function applyEdsConfig(d: ClusterDraft, name: string): void {
  if (discoveryType(d) !== Cluster_DiscoveryType.EDS) return;
  d.c.edsClusterConfig = {
    serviceName: name,
    edsConfig: {
      configSourceSpecifier: { case: 'ads', value: {} },
      initialFetchTimeout: durationFromMs(0),
      resourceApiVersion: ApiVersion.V3,
    },
  };
}

export function rawBufferSocket(): NonNullable<ClusterInit['transportSocket']> {
  return { name: RAW_BUFFER_TRANSPORT_SOCKET, configType: { case: 'typedConfig', value: packAny(RawBufferSchema, {}) } };
}

export function isHttp2(d: ClusterDraft): boolean {
  const u = d.http?.upstreamProtocolOptions;
  return u?.case === 'explicitHttpConfig' && u.value.protocolConfig?.case === 'http2ProtocolOptions';
}

/** Whether the proxy has an IPv4 / IPv6 address (no address: IPv4, as istiod assumes). */
export function ipFamilies(proxy: Proxy): { v4: boolean; v6: boolean } {
  const v6 = proxy.ipAddresses.some((a) => a.includes(':'));
  const v4 = proxy.ipAddresses.some((a) => !a.includes(':')) || proxy.ipAddresses.length === 0;
  return { v4, v6 };
}

/**
 * istiod's clusterWrapper.build: packs the HttpProtocolOptions (with an explicit HTTP/1 config when
 * nothing chose the upstream protocol — Envoy requires one) and the inline load assignment.
 */
export function finishCluster(d: ClusterDraft): Cluster {
  if (d.http) {
    if (d.http.upstreamProtocolOptions?.case === undefined) {
      d.http.upstreamProtocolOptions = {
        case: 'explicitHttpConfig',
        value: { protocolConfig: { case: 'httpProtocolOptions', value: {} } },
      };
    }
    d.c.typedExtensionProtocolOptions = { [HTTP_PROTOCOL_OPTIONS]: packAny(HttpProtocolOptionsSchema, d.http) };
  }
  if (d.inlineEndpoints && d.c.loadAssignment === undefined && discoveryType(d) !== Cluster_DiscoveryType.ORIGINAL_DST) {
    d.c.loadAssignment = { clusterName: d.c.name ?? '', endpoints: toLocalityLbEndpoints(d.inlineEndpoints) };
  }
  return create(ClusterSchema, d.c);
}
