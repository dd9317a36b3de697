import { create } from '@bufbuild/protobuf';
import { Cluster_DiscoveryType, Cluster_LbPolicy, type Cluster } from '../../gen/envoy/config/cluster/v3/cluster_pb.js';
import { BindConfigSchema } from '../../gen/envoy/config/core/v3/address_pb.js';
import { HttpProtocolOptionsSchema } from '../../gen/envoy/extensions/upstreams/http/v3/http_protocol_options_pb.js';
import {
  type Proxy,
  type ProxyExtensions,
  type PushContext,
  BLACKHOLE_CLUSTER,
  INBOUND_PASSTHROUGH_CLUSTER,
  PASSTHROUGH_CLUSTER,
} from '../../model/index.js';
import { clusterMxFilters } from '../istio-extensions.js';
import { durationFromMs, packAny } from '../common.js';
import { meshTrafficSettings } from '../traffic-policy.js';
import { altStatName, finishCluster, HTTP_PROTOCOL_OPTIONS, ipFamilies, type ClusterDraft, type ClusterInit } from './cluster-draft.js';
import { applyConnectionPool } from './connection-pool.js';

/** Source addresses iptables lets through instead of redirecting back to the sidecar (istiod's InboundPassthroughBindIpv4/6). */
export const INBOUND_PASSTHROUGH_BIND_V4 = '127.0.0.6';
export const INBOUND_PASSTHROUGH_BIND_V6 = '::6';

/** istiod's passthrough bind addresses for the proxy's IP families, IPv4 first. */
export function passthroughBindAddresses(proxy: Proxy): string[] {
  const { v4, v6 } = ipFamilies(proxy);
  return [...(v4 ? [INBOUND_PASSTHROUGH_BIND_V4] : []), ...(v6 ? [INBOUND_PASSTHROUGH_BIND_V6] : [])];
}

/** istiod's upstream_bind_config for passthrough: the first family's address, the other as extra. */
export function passthroughBindConfig(proxy: Proxy): NonNullable<ClusterInit['upstreamBindConfig']> {
  const [first = INBOUND_PASSTHROUGH_BIND_V4, ...extra] = passthroughBindAddresses(proxy);
  const addr = (a: string) => ({ address: a, portSpecifier: { case: 'portValue' as const, value: 0 } });
  return {
    sourceAddress: addr(first),
    ...(extra.length > 0 ? { extraSourceAddresses: extra.map((a) => ({ address: addr(a) })) } : {}),
  };
}

/** Traffic to routes that resolve nowhere: a STATIC cluster without endpoints (istiod's buildBlackHoleCluster). */
export function buildBlackHoleCluster(push: PushContext): Cluster {
  return finishCluster({
    c: {
      name: BLACKHOLE_CLUSTER,
      clusterDiscoveryType: { case: 'type', value: Cluster_DiscoveryType.STATIC },
      connectTimeout: durationFromMs(push.mesh.connectTimeoutMs),
      lbPolicy: Cluster_LbPolicy.ROUND_ROBIN,
      altStatName: altStatName(BLACKHOLE_CLUSTER),
    },
  });
}

/**
 * Outbound traffic to unknown destinations (ALLOW_ANY): ORIGINAL_DST, HTTP as the client spoke it
 * with a 5 minute idle timeout, and the default (max) circuit breakers (istiod's
 * buildDefaultPassthroughCluster; MeshConfig defaultTrafficPolicy is not supported yet). Given the
 * proxy's extensions, it carries metadata exchange as outbound clusters do.
 */
export function buildPassthroughCluster(push: PushContext, extensions?: ProxyExtensions): Cluster {
  const d: ClusterDraft = {
    c: {
      name: PASSTHROUGH_CLUSTER,
      clusterDiscoveryType: { case: 'type', value: Cluster_DiscoveryType.ORIGINAL_DST },
      lbPolicy: Cluster_LbPolicy.CLUSTER_PROVIDED,
      altStatName: altStatName(PASSTHROUGH_CLUSTER),
      typedExtensionProtocolOptions: {
        [HTTP_PROTOCOL_OPTIONS]: packAny(HttpProtocolOptionsSchema, {
          commonHttpProtocolOptions: { idleTimeout: durationFromMs(300_000) },
          upstreamProtocolOptions: { case: 'useDownstreamProtocolConfig', value: { httpProtocolOptions: {}, http2ProtocolOptions: {} } },
        }),
      },
    },
  };
  applyConnectionPool(d, meshTrafficSettings(push.mesh), undefined);
  if (extensions) d.c.filters = clusterMxFilters(extensions);
  return finishCluster(d);
}

/**
 * Inbound traffic to ports no service declares: the passthrough cluster again, bound to 127.0.0.6
 * (::6 on IPv6) so iptables does not capture it a second time. Its stat name stays
 * `PassthroughCluster;`, as istiod leaves it when renaming the copy.
 */
export function buildInboundPassthroughCluster(push: PushContext, proxy: Proxy): Cluster {
  const c = buildPassthroughCluster(push);
  c.name = INBOUND_PASSTHROUGH_CLUSTER;
  c.upstreamBindConfig = create(BindConfigSchema, passthroughBindConfig(proxy));
  return c;
}
