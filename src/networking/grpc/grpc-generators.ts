import { create, toBinary, type JsonObject } from '@bufbuild/protobuf';
import { ClusterSchema, Cluster_LbPolicy } from '../../gen/envoy/config/cluster/v3/cluster_pb.js';
import { MetadataSchema, TransportSocketSchema } from '../../gen/envoy/config/core/v3/base_pb.js';
import { ClusterLoadAssignmentSchema } from '../../gen/envoy/config/endpoint/v3/endpoint_pb.js';
import { ListenerSchema } from '../../gen/envoy/config/listener/v3/listener_pb.js';
import { RouteConfigurationSchema } from '../../gen/envoy/config/route/v3/route_pb.js';
import { HTTPFaultSchema } from '../../gen/envoy/extensions/filters/http/fault/v3/fault_pb.js';
import { RouterSchema } from '../../gen/envoy/extensions/filters/http/router/v3/router_pb.js';
import { HttpConnectionManagerSchema } from '../../gen/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager_pb.js';
import { type PushContext, type Proxy, proxyLabelsKey, buildClusterName, parseClusterName } from '../../model/index.js';
import type { Logger } from '../../util/log.js';
import { GeneratorRegistry, type Generator, type WatchedResourceView, makeResource, type XdsResource } from '../../xds/index.js';
import { TypeUrl } from '../../xds/type-urls.js';
import { buildEdsCluster } from '../cluster/cluster-builder.js';
import { adsConfigSource, packAny } from '../common.js';
import { buildEndpointsFor } from '../endpoint/index.js';
import { serviceAccounts } from '../endpoint/istio-endpoint.js';
import { topologyKey } from '../proxy-keys.js';
import type { SkippedRule } from '../policy/index.js';
import { FAULT_FILTER, ROUTER_FILTER } from '../route/route-action.js';
import { buildHttpRoutes } from '../route/http-routes.js';
import { effectiveTrafficPolicy } from '../traffic-policy.js';
import { virtualHostDomains } from '../route/virtual-host-domains.js';
import { grpcClusterTlsSocket } from './grpc-tls.js';
import { buildGrpcInboundListener, INBOUND_LISTENER_PREFIX, parseInboundListenerName } from './inbound-listener.js';
import { resolveRouteName, resolveTarget } from './target.js';

/**
 * Proxyless gRPC generators (istiod's grpcgen): clients name every resource they want, so each
 * generator builds exactly the requested names that exist. Wildcard requests get nothing, as from
 * istiod. Each resource is built once per push and view, then shared through the push's cache.
 */
function each(
  watched: WatchedResourceView,
  push: PushContext,
  keyOf: (name: string) => string,
  build: (name: string) => XdsResource | undefined,
): XdsResource[] {
  const out: XdsResource[] = [];
  for (const name of [...watched.names].sort()) {
    const res = push.derive(keyOf(name), () => build(name));
    if (res) out.push(res);
  }
  return out;
}

const HCM_FILTERS = [
  // An empty fault filter: the per-route typed_per_filter_config carries the actual faults.
  { name: FAULT_FILTER, configType: { case: 'typedConfig' as const, value: packAny(HTTPFaultSchema, {}) } },
  { name: ROUTER_FILTER, configType: { case: 'typedConfig' as const, value: packAny(RouterSchema, {}) } },
];

export interface GrpcGeneratorOptions {
  /** Where skipped AuthorizationPolicy rules are reported (istiod logs them); silent by default. */
  readonly logger?: Logger;
}

/** A client's api_listener for a dial target `host:port`, or undefined when the target is unknown. */
function buildOutboundListener(name: string, push: PushContext, proxy: Proxy): XdsResource | undefined {
  const target = resolveTarget(name, push, proxy);
  if (!target) return undefined;
  // istiod names the route `outbound|<port>||<host>`, so one RouteConfiguration serves every
  // spelling of the target (short name, FQDN, with a trailing dot).
  const routeConfigName = buildClusterName('outbound', target.port, '', target.service.hostname);
  const hcm = packAny(HttpConnectionManagerSchema, {
    // gRPC ignores it (istiod leaves it out); Envoy's validation rules require one.
    statPrefix: `outbound_${target.port}_${target.service.hostname}`,
    routeSpecifier: { case: 'rds', value: { configSource: adsConfigSource(), routeConfigName } },
    httpFilters: HCM_FILTERS,
  });
  const listener = create(ListenerSchema, { name, apiListener: { apiListener: hcm } });
  return makeResource(name, TypeUrl.Listener, toBinary(ListenerSchema, listener));
}

/**
 * LDS: client targets (`host:port`) and, for an XdsServer, its inbound listeners
 * (`xds.istio.io/grpc/lds/inbound/<ip>:<port>`), which depend on the server's own namespace and
 * labels (PeerAuthentication, AuthorizationPolicy) and so are cached per workload view.
 */
export function grpcListenerGeneratorWith(opts: GrpcGeneratorOptions = {}): Generator {
  const log = opts.logger;
  return {
    generate(proxy, watched, push) {
      const labels = proxyLabelsKey(proxy);
      return each(
        watched,
        push,
        (n) => (n.startsWith(INBOUND_LISTENER_PREFIX) ? `LDS-in|${proxy.namespace}|${labels}|${n}` : `LDS|${proxy.namespace}|${n}`),
        (name) => {
          const addr = parseInboundListenerName(name);
          if (!addr) return buildOutboundListener(name, push, proxy);
          const onSkippedRule = log
            ? (s: SkippedRule): void => log.debug('authorization rule skipped', { proxy: proxy.id, rule: s.rule, reason: s.reason })
            : undefined;
          const listener = buildGrpcInboundListener(name, addr, push, proxy, onSkippedRule ? { onSkippedRule } : {});
          return makeResource(name, TypeUrl.Listener, toBinary(ListenerSchema, listener));
        },
      );
    },
  };
}

export const grpcListenerGenerator: Generator = grpcListenerGeneratorWith();

export const grpcRouteGenerator: Generator = {
  generate(proxy, watched, push) {
    return each(
      watched,
      push,
      (n) => `RDS|${push.routeViewKey(proxy)}|${n}`,
      (name) => {
        // Our LDS names routes `outbound|<port>||<host>` (istiod's form); `host:port`, the name earlier
        // versions used, is still answered so clients holding it keep working.
        const target = resolveRouteName(name, push, proxy) ?? resolveTarget(name, push, proxy);
        if (!target) return undefined;
        const host = target.service.hostname;
        const routes = buildHttpRoutes({ push, proxy, service: target.service, port: target.port, headerStyle: 'legacy' });
        const rc = create(RouteConfigurationSchema, {
          name,
          virtualHosts: [
            { name: `${host}:${target.port}`, domains: virtualHostDomains(host, target.port, proxy, push.mesh.domain), routes },
          ],
        });
        return makeResource(name, TypeUrl.RouteConfiguration, toBinary(RouteConfigurationSchema, rc));
      },
    );
  },
};

export const grpcClusterGenerator: Generator = {
  generate(proxy, watched, push) {
    return each(
      watched,
      push,
      (n) => `CDS|${proxy.namespace}|${n}`,
      (name) => {
        const parsed = parseClusterName(name);
        if (!parsed || parsed.direction !== 'outbound') return undefined;
        const service = push.service(parsed.host, proxy.namespace);
        if (!service || !service.ports.some((p) => p.port === parsed.port)) return undefined;
        if (parsed.subset !== '' && !push.subset(service, proxy.namespace, parsed.subset)) return undefined;
        const policy = effectiveTrafficPolicy(push, proxy, service, parsed.port, parsed.subset);
        const cluster = buildEdsCluster({ name, policy, mesh: push.mesh, defaultLbPolicy: Cluster_LbPolicy.ROUND_ROBIN });
        const tls = grpcClusterTlsSocket(policy, serviceAccounts(push, service));
        if (tls) cluster.transportSocket = create(TransportSocketSchema, tls);
        // The DestinationRule the cluster follows, as on Envoy's clusters (meshctl proxy-config cluster's
        // DESTINATION RULE column). istiod leaves it out for gRPC; grpc-js ignores cluster metadata.
        const dr = push.destinationRule(service, proxy.namespace);
        if (dr) {
          const istio: JsonObject = {
            config: `/apis/networking.istio.io/v1/namespaces/${dr.meta.namespace}/destination-rule/${dr.meta.name}`,
          };
          if (parsed.subset !== '') istio.subset = parsed.subset;
          cluster.metadata = create(MetadataSchema, { filterMetadata: { istio } });
        }
        return makeResource(name, TypeUrl.Cluster, toBinary(ClusterSchema, cluster));
      },
    );
  },
};

/**
 * EDS: istiod serves proxyless clients its one EDS generator (pilot/pkg/bootstrap/discovery.go
 * registers `grpc/` + EndpointType as edsGen), so a gRPC client gets the ClusterLoadAssignment an
 * Envoy sidecar of the same topology gets: cluster-local and subset filtering, tlsMode metadata, and
 * split-horizon EDS across networks (network-filter.ts: another network's endpoints become its east-west
 * gateway). istiod only never tunnels (HBONE) to a proxyless client (endpoint_builder.go supportTunnel);
 * meshpilot's sidecar EDS has no HBONE endpoints either. A name of no known service gets an empty
 * assignment, as from istiod.
 */
export const grpcEndpointGenerator: Generator = {
  generate(proxy, watched, push) {
    const topology = topologyKey(push, proxy);
    return each(
      watched,
      push,
      (n) => `EDS|grpc|${topology}|${n}`,
      (name) => {
        const cla = buildEndpointsFor(push, proxy, name);
        return cla ? makeResource(name, TypeUrl.ClusterLoadAssignment, toBinary(ClusterLoadAssignmentSchema, cla)) : undefined;
      },
    );
  },
};

/** Registers the proxyless set under `grpc/<typeUrl>` (node metadata GENERATOR: grpc). */
export function registerGrpcGenerators(registry: GeneratorRegistry, opts: GrpcGeneratorOptions = {}): GeneratorRegistry {
  return registry
    .register(`grpc/${TypeUrl.Listener}`, opts.logger ? grpcListenerGeneratorWith(opts) : grpcListenerGenerator)
    .register(`grpc/${TypeUrl.RouteConfiguration}`, grpcRouteGenerator)
    .register(`grpc/${TypeUrl.Cluster}`, grpcClusterGenerator)
    .register(`grpc/${TypeUrl.ClusterLoadAssignment}`, grpcEndpointGenerator);
}

export type { Proxy };
