/**
 * Services of the workload API (istio.workload.Service) from Kubernetes Services and ServiceEntries,
 * as istiod builds them (pilot/pkg/serviceregistry/ambient/services.go constructService,
 * constructServiceEntries), each with what a workload needs to join it (selector, port names).
 */
import { create } from '@bufbuild/protobuf';
import type { Config, ServiceVisibility } from '../../config/index.js';
import { ServiceEntry_Resolution } from '../../gen/networking/v1alpha3/service_entry_pb.js';
import {
  AddressSchema,
  AppProtocol,
  IPFamilies,
  LoadBalancing_HealthPolicy,
  LoadBalancing_Mode,
  LoadBalancing_Scope,
  LoadBalancingSchema,
  NetworkAddressSchema,
  PortSchema,
  ServiceSchema,
  Service_Visibility,
  type Address,
  type LoadBalancing,
  type NetworkAddress,
} from '../../gen/workloadapi/workload_pb.js';
import { convertProtocol, parseProtocol, type AmbientKubeService, type Protocol } from '../../registry/index.js';
import { ipAddressBytes, ipPrefixBytes } from '../../util/ip.js';
import { ingressUseWaypoint, type Waypoints } from './waypoints.js';

type Labels = Readonly<Record<string, string>>;

/** One port of a service with the names a workload's ports are matched by. */
export interface ServiceInfoPort {
  readonly servicePort: number;
  /** 0: a named targetPort, resolved per workload. */
  readonly targetPort: number;
  readonly portName: string;
  /** A Kubernetes Service's named targetPort. */
  readonly targetPortName?: string;
}

/** One service of the index (istiod's model.ServiceInfo). */
export interface ServiceInfo {
  /** The resource name: `namespace/hostname`. */
  readonly name: string;
  readonly namespace: string;
  readonly sourceKind: 'Service' | 'ServiceEntry';
  /** Workloads it selects (same namespace); undefined selects none. */
  readonly selector: Labels | undefined;
  readonly ports: readonly ServiceInfoPort[];
  readonly address: Address;
  /** The hostname (several sources may define one). */
  readonly hostname: string;
  /** When its source was created (ms; 0 unknown): the oldest ServiceEntry of a host is its canonical one; a waypoint's services go in this order. */
  readonly created: number;
}

const TRAFFIC_DISTRIBUTION_ANNOTATION = 'networking.istio.io/traffic-distribution';

/** istiod's toAppProtocolFromProtocol. */
export function appProtocolOf(p: Protocol): AppProtocol {
  switch (p) {
    case 'HTTP':
      return AppProtocol.HTTP11;
    case 'HTTP2':
      return AppProtocol.HTTP2;
    case 'GRPC':
      return AppProtocol.GRPC;
    case 'TLS':
    case 'HTTPS':
      return AppProtocol.TLS;
    case 'TCP':
      return AppProtocol.TCP;
    default:
      return AppProtocol.UNKNOWN;
  }
}

function networkAddress(ip: string, network: string): NetworkAddress | undefined {
  const address = ipAddressBytes(ip);
  return address ? create(NetworkAddressSchema, { network, address }) : undefined;
}

const failover = (scopes: readonly LoadBalancing_Scope[]): LoadBalancing =>
  create(LoadBalancingSchema, { routingPreference: [...scopes], mode: LoadBalancing_Mode.FAILOVER });

/** istiod's GetTrafficDistribution: the Service field, else the annotation on it or its namespace. */
function trafficLoadBalancing(field: string | undefined, annotations: Labels, namespaceAnnotations: Labels): LoadBalancing | undefined {
  const v = field ?? annotations[TRAFFIC_DISTRIBUTION_ANNOTATION] ?? namespaceAnnotations[TRAFFIC_DISTRIBUTION_ANNOTATION];
  const { NETWORK, REGION, ZONE, SUBZONE, NODE } = LoadBalancing_Scope;
  if (v === 'PreferClose' || v === 'PreferSameZone') return failover([NETWORK, REGION, ZONE]);
  if (v === 'PreferSameNode') return failover([NETWORK, REGION, ZONE, SUBZONE, NODE]);
  return undefined;
}

export interface ServiceContext {
  readonly domain: string;
  /** The network of this cluster's addresses ('' unless configured). */
  readonly network: string;
  readonly waypoints: Waypoints;
  readonly namespaceLabels: (namespace: string) => Labels;
  /** How far a ServiceEntry of the namespace is seen (MeshConfig.serviceEntryVisibility). */
  readonly serviceEntryVisibility: (namespace: string) => ServiceVisibility;
}

/** A Kubernetes Service; undefined for ExternalName (ambient serves none, as istiod). */
export function kubeServiceInfo(s: AmbientKubeService, ctx: ServiceContext): ServiceInfo | undefined {
  if (s.externalName) return undefined;
  const hostname = `${s.name}.${s.namespace}.svc.${ctx.domain}`;
  const nsLabels = ctx.namespaceLabels(s.namespace);
  const waypoint = ctx.waypoints.forService(s.namespace, s.labels, nsLabels);
  let lb: LoadBalancing | undefined = s.internalTrafficPolicyLocal
    ? create(LoadBalancingSchema, { routingPreference: [LoadBalancing_Scope.NODE], mode: LoadBalancing_Mode.STRICT })
    : trafficLoadBalancing(s.trafficDistribution, s.annotations, {});
  if (s.publishNotReadyAddresses) {
    lb ??= create(LoadBalancingSchema, {});
    lb.healthPolicy = LoadBalancing_HealthPolicy.ALLOW_ALL;
  }
  const families = s.ipFamilies;
  const ipFamilies =
    families.length === 2
      ? IPFamilies.DUAL
      : families.length === 1
        ? families[0] === 'IPv4'
          ? IPFamilies.IPV4_ONLY
          : IPFamilies.IPV6_ONLY
        : IPFamilies.AUTOMATIC;
  const service = create(ServiceSchema, {
    name: s.name,
    namespace: s.namespace,
    hostname,
    addresses: s.clusterIps.flatMap((ip) => networkAddress(ip, ctx.network) ?? []),
    ports: s.ports.map((p) =>
      create(PortSchema, {
        servicePort: p.port,
        targetPort: typeof p.targetPort === 'number' ? p.targetPort : 0,
        appProtocol: appProtocolOf(convertProtocol(p.port, p.name, p.protocol, p.appProtocol)),
      }),
    ),
    ...(waypoint ? { waypoint: waypoint.address } : {}),
    ...(waypoint && ingressUseWaypoint(s.labels, nsLabels) ? { ingressUseWaypoint: true } : {}),
    ...(lb ? { loadBalancing: lb } : {}),
    ipFamilies,
    // A Kubernetes Service is always canonical (istiod): overrides of its host must be namespace-local.
    canonical: true,
  });
  return {
    name: `${s.namespace}/${hostname}`,
    namespace: s.namespace,
    sourceKind: 'Service',
    hostname,
    created: s.created ?? 0,
    selector: s.selector,
    ports: s.ports.map((p) => ({
      servicePort: p.port,
      targetPort: typeof p.targetPort === 'number' ? p.targetPort : 0,
      portName: p.name,
      ...(typeof p.targetPort === 'string' ? { targetPortName: p.targetPort } : {}),
    })),
    address: create(AddressSchema, { type: { case: 'service', value: service } }),
  };
}

/**
 * A ServiceEntry: one service per host; none when its visibility is `none` (istiod configures no
 * data plane for it). A `namespace` one is marked so, and is not bound to a waypoint of another
 * namespace (that would expose it there).
 */
export function serviceEntryInfos(se: Config<'ServiceEntry'>, ctx: ServiceContext): ServiceInfo[] {
  const { namespace, name } = se.meta;
  const spec = se.spec;
  const visibility = ctx.serviceEntryVisibility(namespace);
  if (visibility === 'none') return [];
  const nsLabels = ctx.namespaceLabels(namespace);
  const bound = ctx.waypoints.forService(namespace, se.meta.labels, nsLabels);
  const waypoint = visibility === 'namespace' && bound?.namespace !== namespace ? undefined : bound;
  // An address is an IP or a CIDR (its address), as istiod's toNetworkAddressFromCidr.
  const addresses = spec.addresses.flatMap((a) => {
    const address = a.includes('/') ? ipPrefixBytes(a)?.address : ipAddressBytes(a);
    return address ? [create(NetworkAddressSchema, { network: ctx.network, address })] : [];
  });
  const lb =
    spec.resolution === ServiceEntry_Resolution.NONE
      ? create(LoadBalancingSchema, { mode: LoadBalancing_Mode.PASSTHROUGH, healthPolicy: LoadBalancing_HealthPolicy.ALLOW_ALL })
      : trafficLoadBalancing(undefined, se.meta.annotations, {});
  const ports = spec.ports.map((p) =>
    create(PortSchema, {
      servicePort: p.number,
      targetPort: p.targetPort !== 0 ? p.targetPort : p.number,
      appProtocol: appProtocolOf(parseProtocol(p.protocol)),
    }),
  );
  const selector = spec.workloadSelector?.labels;
  return spec.hosts.map((hostname) => ({
    name: `${namespace}/${hostname}`,
    namespace,
    sourceKind: 'ServiceEntry' as const,
    hostname,
    created: se.meta.creationTimestamp ?? 0,
    selector: selector && Object.keys(selector).length > 0 ? selector : undefined,
    ports: spec.ports.map((p) => ({ servicePort: p.number, targetPort: p.targetPort, portName: p.name })),
    address: create(AddressSchema, {
      type: {
        case: 'service',
        value: create(ServiceSchema, {
          name,
          namespace,
          hostname,
          addresses,
          ports,
          ...(waypoint ? { waypoint: waypoint.address } : {}),
          ...(waypoint && ingressUseWaypoint(se.meta.labels, nsLabels) ? { ingressUseWaypoint: true } : {}),
          subjectAltNames: [...spec.subjectAltNames],
          ...(lb ? { loadBalancing: lb } : {}),
          ...(visibility === 'namespace' ? { visibility: Service_Visibility.NAMESPACE } : {}),
        }),
      },
    }),
  }));
}
