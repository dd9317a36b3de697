import { toBinary } from '@bufbuild/protobuf';
import { ClusterSchema, type Cluster } from '../gen/envoy/config/cluster/v3/cluster_pb.js';
import { ClusterLoadAssignmentSchema } from '../gen/envoy/config/endpoint/v3/endpoint_pb.js';
import { ServerTLSSettings_TLSmode } from '../gen/networking/v1alpha3/gateway_pb.js';
import type { Proxy, PushContext, CredentialLookup } from '../model/index.js';
import type { Service } from '../registry/index.js';
import type { Logger } from '../util/log.js';
import {
  type Generator,
  type GeneratorRegistry,
  internResources,
  joinResources,
  makeResource,
  type XdsResource,
  pooledNameSetId,
} from '../xds/index.js';
import { TypeUrl } from '../xds/type-urls.js';
import {
  buildBlackHoleCluster,
  buildInboundClusters,
  buildInboundPassthroughCluster,
  buildOutboundClusters,
  buildPassthroughCluster,
  buildSniDnatClusters,
} from './cluster/index.js';
import { buildEndpointsFor } from './endpoint/index.js';
import { clusterKey, serviceClusterKey, topologyKey } from './proxy-keys.js';
import { ndsGenerator } from './dns/nds-generator.js';
import { envoyFilterEcdsSource, withEnvoyFilters } from './envoyfilter/index.js';
import { ecdsGenerator, wasmEcdsSource } from './extension/ecds-generator.js';
import { routerListenerGenerator, routerRouteGenerator, routerSecretGenerator } from './router/router-generators.js';
import { sidecarListenerGenerator, sidecarRouteGenerator, workloadKey } from './sidecar/sidecar-generators.js';
import { buildIngressCluster, inboundPorts } from './sidecar/sidecar-ingress.js';
import {
  waypointClusterGenerator,
  waypointEndpointGenerator,
  waypointListenerGenerator,
  waypointRouteGenerator,
} from './waypoint/waypoint-generators.js';

const encodeClusters = (cs: readonly Cluster[]): XdsResource[] =>
  cs.map((c) => makeResource(c.name, TypeUrl.Cluster, toBinary(ClusterSchema, c)));

/**
 * Outbound clusters of the given services in order, each service's encoded apart so that a change
 * to one service rebuilds only its clusters. Cached per service, DestinationRule that applies and
 * topology, not per namespace: the namespaces that resolve the same rule (most, in most meshes)
 * share them. On a name clash the first cluster wins (istiod's normalizeClusters).
 */
function outboundClusters(push: PushContext, proxy: Proxy, services: readonly Service[]): XdsResource[] {
  const out: XdsResource[] = [];
  const seen = new Set<string>();
  const topology = serviceClusterKey(push, proxy);
  for (const service of services) {
    const dr = push.destinationRuleKey(service, proxy.namespace);
    const clusters = push.deriveForService(service, `CDS|svc|${service.namespace}/${service.hostname}|${dr}|${topology}`, () =>
      encodeClusters(buildOutboundClusters({ push, proxy, services: [service] })),
    );
    for (const c of clusters) {
      if (!seen.has(c.name)) out.push(c);
      seen.add(c.name);
    }
  }
  return out;
}

/** Sidecar CDS in istiod's order: outbound, BlackHole, Passthrough, inbound, InboundPassthrough. */
const sidecarClusterGenerator: Generator = {
  generate(proxy, _watched, push) {
    const scope = push.sidecarScope(proxy);
    const outbound = push.derive(`CDS|out|${push.outboundViewKey(proxy, scope)}|${serviceClusterKey(push, proxy)}`, () => [
      ...outboundClusters(push, proxy, scope.services),
      ...encodeClusters([buildBlackHoleCluster(push), buildPassthroughCluster(push, proxy.extensions)]),
    ]);
    const inbound = push.derive(`CDS|in|${scope.key}|${workloadKey(proxy)}`, () => {
      const instances = push.serviceInstances(proxy);
      // A Sidecar's ingress listeners replace the service-derived inbound ports (and clusters).
      const fromIngress = scope.sidecar !== undefined && scope.sidecar.spec.ingress.length > 0;
      const clusters = fromIngress
        ? inboundPorts(scope.sidecar, instances).map((p) => buildIngressCluster(push, proxy, p, instances))
        : buildInboundClusters({ push, proxy, instances });
      // Alike across replicas and proxies without instances: one list, so one joined list per view.
      return internResources(encodeClusters([...clusters, buildInboundPassthroughCluster(push, proxy)]));
    });
    return joinResources(outbound, inbound);
  },
};

/** Whether any Gateway selecting this router has an AUTO_PASSTHROUGH server (SNI-DNAT clusters). */
function hasAutoPassthrough(push: PushContext, proxy: Proxy): boolean {
  return push.gatewaysFor(proxy).some((g) => g.spec.servers.some((s) => s.tls?.mode === ServerTLSSettings_TLSmode.AUTO_PASSTHROUGH));
}

/** Router CDS: the outbound clusters of every visible service, SNI-DNAT clusters for AUTO_PASSTHROUGH, BlackHole. */
const routerClusterGenerator: Generator = {
  generate(proxy, _watched, push) {
    const scope = push.sidecarScope(proxy);
    const dnat = hasAutoPassthrough(push, proxy);
    const topology = clusterKey(push, proxy);
    return push.derive(`CDS|router|${scope.key}|${topology}|${dnat}`, () => [
      ...outboundClusters(push, proxy, scope.services),
      ...encodeClusters([...(dnat ? buildSniDnatClusters(push, proxy, scope.services) : []), buildBlackHoleCluster(push)]),
    ]);
  },
};

/**
 * EDS for the names Envoy asks for (its EDS clusters); each ClusterLoadAssignment shared by proxies
 * of the same topology, and the whole list by proxies that also watch the same (pooled) name set:
 * the sidecars of a namespace then cost one cache hit each, not one per cluster.
 */
const envoyEndpointGenerator: Generator = {
  generate(proxy, watched, push) {
    const key = topologyKey(push, proxy);
    const build = (): XdsResource[] => {
      const out: XdsResource[] = [];
      for (const name of [...watched.names].sort()) {
        const res = push.derive(`EDS|${key}|${name}`, () => {
          const cla = buildEndpointsFor(push, proxy, name);
          return cla ? makeResource(name, TypeUrl.ClusterLoadAssignment, toBinary(ClusterLoadAssignmentSchema, cla)) : undefined;
        });
        if (res) out.push(res);
      }
      return out;
    };
    const listId = watched.wildcard ? undefined : pooledNameSetId(watched.names);
    return listId === undefined ? build() : push.derive(`EDS|list|${key}|${listId}`, build);
  },
};

export interface EnvoyGeneratorOptions {
  readonly logger: Logger;
  /** Gateway credentials (`credentialName`) for a push: Secrets from the config source. */
  readonly credentials: (push: PushContext) => CredentialLookup;
}

/**
 * Registers the Envoy sets: `sidecar/<typeUrl>` (LDS, RDS, CDS, EDS, ECDS; workload certificates come
 * from the node agent), `router/<typeUrl>` (the same plus SDS for gateway credentials) and
 * `waypoint/<typeUrl>` (LDS, CDS, EDS of an ambient waypoint; its routes are inline), and NDS (the DNS
 * name table) for sidecars and routers.
 */
export function registerEnvoyGenerators(registry: GeneratorRegistry, o: EnvoyGeneratorOptions): GeneratorRegistry {
  // EnvoyFilter patches apply after generation, to the proxies they select (istiod's order and semantics).
  const ef = o.logger.child('envoyfilter');
  const patched = (g: Generator, typeUrl: string, router: boolean): Generator => withEnvoyFilters(g, typeUrl, router, ef);
  // EnvoyFilter EXTENSION_CONFIG patches answer first, as in istiod.
  const ecds = ecdsGenerator([envoyFilterEcdsSource(ef), wasmEcdsSource]);
  return registry
    .register(`sidecar/${TypeUrl.Listener}`, patched(sidecarListenerGenerator(o.logger.child('sidecar')), TypeUrl.Listener, false))
    .register(`sidecar/${TypeUrl.RouteConfiguration}`, patched(sidecarRouteGenerator, TypeUrl.RouteConfiguration, false))
    .register(`sidecar/${TypeUrl.Cluster}`, patched(sidecarClusterGenerator, TypeUrl.Cluster, false))
    .register(`sidecar/${TypeUrl.ClusterLoadAssignment}`, envoyEndpointGenerator)
    .register(`router/${TypeUrl.Listener}`, patched(routerListenerGenerator, TypeUrl.Listener, true))
    .register(`router/${TypeUrl.RouteConfiguration}`, patched(routerRouteGenerator, TypeUrl.RouteConfiguration, true))
    .register(`router/${TypeUrl.Cluster}`, patched(routerClusterGenerator, TypeUrl.Cluster, true))
    .register(`router/${TypeUrl.ClusterLoadAssignment}`, envoyEndpointGenerator)
    .register(`router/${TypeUrl.Secret}`, routerSecretGenerator(o.credentials, o.logger.child('router')))
    .register(`waypoint/${TypeUrl.Listener}`, patched(waypointListenerGenerator, TypeUrl.Listener, false))
    .register(`waypoint/${TypeUrl.RouteConfiguration}`, waypointRouteGenerator)
    .register(`waypoint/${TypeUrl.Cluster}`, patched(waypointClusterGenerator, TypeUrl.Cluster, false))
    .register(`waypoint/${TypeUrl.ClusterLoadAssignment}`, waypointEndpointGenerator)
    .register(`sidecar/${TypeUrl.ExtensionConfiguration}`, ecds)
    .register(`router/${TypeUrl.ExtensionConfiguration}`, ecds)
    .register(`sidecar/${TypeUrl.NameTable}`, ndsGenerator)
    .register(`router/${TypeUrl.NameTable}`, ndsGenerator);
}
