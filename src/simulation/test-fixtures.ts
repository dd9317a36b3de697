import { create, type JsonObject } from '@bufbuild/protobuf';
import { ClusterSchema, Cluster_DiscoveryType, type Cluster } from '../gen/envoy/config/cluster/v3/cluster_pb.js';
import { ClusterLoadAssignmentSchema, type ClusterLoadAssignment } from '../gen/envoy/config/endpoint/v3/endpoint_pb.js';
import type { FilterChainSchema, FilterChainMatchSchema, FilterSchema } from '../gen/envoy/config/listener/v3/listener_components_pb.js';
import { ListenerSchema, type Listener } from '../gen/envoy/config/listener/v3/listener_pb.js';
import { RBAC_Action, type PermissionSchema, type PolicySchema, type PrincipalSchema } from '../gen/envoy/config/rbac/v3/rbac_pb.js';
import type { VirtualHostSchema } from '../gen/envoy/config/route/v3/route_components_pb.js';
import { RouteConfigurationSchema, type RouteConfiguration } from '../gen/envoy/config/route/v3/route_pb.js';
import { RBACSchema as HttpRbacSchema } from '../gen/envoy/extensions/filters/http/rbac/v3/rbac_pb.js';
import { RouterSchema } from '../gen/envoy/extensions/filters/http/router/v3/router_pb.js';
import { HttpInspectorSchema } from '../gen/envoy/extensions/filters/listener/http_inspector/v3/http_inspector_pb.js';
import { TlsInspectorSchema } from '../gen/envoy/extensions/filters/listener/tls_inspector/v3/tls_inspector_pb.js';
import {
  HttpConnectionManagerSchema,
  type HttpFilterSchema,
} from '../gen/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager_pb.js';
import { RBACSchema as NetworkRbacSchema } from '../gen/envoy/extensions/filters/network/rbac/v3/rbac_pb.js';
import { TcpProxySchema } from '../gen/envoy/extensions/filters/network/tcp_proxy/v3/tcp_proxy_pb.js';
import { DownstreamTlsContextSchema, UpstreamTlsContextSchema } from '../gen/envoy/extensions/transport_sockets/tls/v3/tls_pb.js';
import { packAny, type Init } from '../networking/common.js';
import type { SimulationConfig } from './types.js';

// Test-only builders of decoded Envoy resources, shaped like istiod's output but written by hand.

export type ChainInit = Init<typeof FilterChainSchema>;
export type FilterInit = Init<typeof FilterSchema>;
export type HttpFilterInit = Init<typeof HttpFilterSchema>;
export type MatchInit = Init<typeof FilterChainMatchSchema>;
export type VirtualHostInit = Init<typeof VirtualHostSchema>;
export type PermissionInit = Init<typeof PermissionSchema>;
export type PrincipalInit = Init<typeof PrincipalSchema>;
export type PolicyInit = Init<typeof PolicySchema>;

export const sockAddr = (address: string, port: number) => ({
  address: { case: 'socketAddress' as const, value: { address, portSpecifier: { case: 'portValue' as const, value: port } } },
});

export interface ListenerOpts {
  readonly chains?: ChainInit[];
  readonly defaultChain?: ChainInit;
  readonly useOriginalDst?: boolean;
  readonly inspectors?: readonly ('tls' | 'http')[];
}

export function listener(name: string, ip: string, port: number, o: ListenerOpts): Listener {
  return create(ListenerSchema, {
    name,
    address: sockAddr(ip, port),
    filterChains: o.chains ?? [],
    ...(o.defaultChain ? { defaultFilterChain: o.defaultChain } : {}),
    ...(o.useOriginalDst ? { useOriginalDst: true } : {}),
    listenerFilters: (o.inspectors ?? []).map((k) =>
      k === 'tls'
        ? {
            name: 'envoy.filters.listener.tls_inspector',
            configType: { case: 'typedConfig' as const, value: packAny(TlsInspectorSchema, {}) },
          }
        : {
            name: 'envoy.filters.listener.http_inspector',
            configType: { case: 'typedConfig' as const, value: packAny(HttpInspectorSchema, {}) },
          },
    ),
  });
}

export function tcpProxy(target: string | { cluster: string; weight: number }[]): FilterInit {
  const clusterSpecifier =
    typeof target === 'string'
      ? { case: 'cluster' as const, value: target }
      : { case: 'weightedClusters' as const, value: { clusters: target.map((t) => ({ name: t.cluster, weight: t.weight })) } };
  return {
    name: 'envoy.filters.network.tcp_proxy',
    configType: { case: 'typedConfig', value: packAny(TcpProxySchema, { statPrefix: 'tcp', clusterSpecifier }) },
  };
}

export const ROUTER: HttpFilterInit = {
  name: 'envoy.filters.http.router',
  configType: { case: 'typedConfig', value: packAny(RouterSchema, {}) },
};

export interface HcmOpts {
  readonly rds?: string;
  readonly vhosts?: VirtualHostInit[];
  readonly httpFilters?: HttpFilterInit[];
}

export function hcm(o: HcmOpts): FilterInit {
  const routeSpecifier =
    o.rds !== undefined
      ? { case: 'rds' as const, value: { routeConfigName: o.rds } }
      : { case: 'routeConfig' as const, value: { name: 'inline', virtualHosts: o.vhosts ?? [] } };
  const value = packAny(HttpConnectionManagerSchema, {
    statPrefix: 'http',
    routeSpecifier,
    httpFilters: [...(o.httpFilters ?? []), ROUTER],
  });
  return { name: 'envoy.filters.network.http_connection_manager', configType: { case: 'typedConfig', value } };
}

export function chain(name: string, filters: FilterInit[], match?: MatchInit, tls?: 'mtls' | 'simple'): ChainInit {
  return { name, filters, ...(match ? { filterChainMatch: match } : {}), ...(tls ? { transportSocket: downstreamTls(tls) } : {}) };
}

/** Istio's inbound mTLS (SDS `default`, client cert required) or a gateway's SIMPLE TLS. */
export function downstreamTls(kind: 'mtls' | 'simple'): NonNullable<ChainInit['transportSocket']> {
  const value = packAny(DownstreamTlsContextSchema, {
    commonTlsContext: { tlsCertificateSdsSecretConfigs: [{ name: kind === 'mtls' ? 'default' : 'kubernetes://gw-cert' }] },
    ...(kind === 'mtls' ? { requireClientCertificate: true } : {}),
  });
  return { name: 'envoy.transport_sockets.tls', configType: { case: 'typedConfig', value } };
}

export function upstreamTls(kind: 'istio' | 'simple', sni = ''): NonNullable<Init<typeof ClusterSchema>['transportSocket']> {
  const value = packAny(UpstreamTlsContextSchema, {
    sni,
    commonTlsContext:
      kind === 'istio' ? { tlsCertificateSdsSecretConfigs: [{ name: 'default' }], alpnProtocols: ['istio-peer-exchange', 'istio'] } : {},
  });
  return { name: 'envoy.transport_sockets.tls', configType: { case: 'typedConfig', value } };
}

export const principal = {
  any: (): PrincipalInit => ({ identifier: { case: 'any', value: true } }),
  authenticated: (exact?: string): PrincipalInit => ({
    identifier: {
      case: 'authenticated',
      value: exact === undefined ? {} : { principalName: { matchPattern: { case: 'exact', value: exact } } },
    },
  }),
  sourceIp: (addressPrefix: string, prefixLen: number): PrincipalInit => ({
    identifier: { case: 'directRemoteIp', value: { addressPrefix, prefixLen } },
  }),
  not: (p: PrincipalInit): PrincipalInit => ({ identifier: { case: 'notId', value: p } }),
  claim: (claim: string, exact: string): PrincipalInit => ({
    identifier: {
      case: 'metadata',
      value: {
        filter: 'envoy.filters.http.jwt_authn',
        path: [{ segment: { case: 'key', value: 'payload' } }, { segment: { case: 'key', value: claim } }],
        value: { matchPattern: { case: 'stringMatch', value: { matchPattern: { case: 'exact', value: exact } } } },
      },
    },
  }),
};

export const permission = {
  any: (): PermissionInit => ({ rule: { case: 'any', value: true } }),
  method: (m: string): PermissionInit => ({
    rule: {
      case: 'header',
      value: { name: ':method', headerMatchSpecifier: { case: 'stringMatch', value: { matchPattern: { case: 'exact', value: m } } } },
    },
  }),
  pathPrefix: (p: string): PermissionInit => ({
    rule: { case: 'urlPath', value: { rule: { case: 'path', value: { matchPattern: { case: 'prefix', value: p } } } } },
  }),
  port: (port: number): PermissionInit => ({ rule: { case: 'destinationPort', value: port } }),
  and: (rules: PermissionInit[]): PermissionInit => ({ rule: { case: 'andRules', value: { rules } } }),
  or: (rules: PermissionInit[]): PermissionInit => ({ rule: { case: 'orRules', value: { rules } } }),
  not: (rule: PermissionInit): PermissionInit => ({ rule: { case: 'notRule', value: rule } }),
};

export const policy = (permissions: PermissionInit[], principals: PrincipalInit[]): PolicyInit => ({ permissions, principals });

export function httpRbac(
  action: 'ALLOW' | 'DENY' | 'LOG',
  policies: Record<string, PolicyInit>,
  name = 'envoy.filters.http.rbac',
): HttpFilterInit {
  return {
    name,
    configType: { case: 'typedConfig', value: packAny(HttpRbacSchema, { rules: { action: RBAC_Action[action], policies } }) },
  };
}

export function networkRbac(action: 'ALLOW' | 'DENY', policies: Record<string, PolicyInit>): FilterInit {
  return {
    name: 'envoy.filters.network.rbac',
    configType: {
      case: 'typedConfig',
      value: packAny(NetworkRbacSchema, { statPrefix: 'tcp.', rules: { action: RBAC_Action[action], policies } }),
    },
  };
}

export interface Ep {
  readonly ip: string;
  readonly port: number;
  readonly tlsMode?: string;
  readonly priority?: number;
}

export function assignment(clusterName: string, eps: readonly Ep[]): ClusterLoadAssignment {
  return create(ClusterLoadAssignmentSchema, {
    clusterName,
    endpoints: eps.map((e) => ({
      priority: e.priority ?? 0,
      lbEndpoints: [
        {
          hostIdentifier: { case: 'endpoint' as const, value: { address: sockAddr(e.ip, e.port) } },
          ...(e.tlsMode ? { metadata: { filterMetadata: { 'envoy.transport_socket_match': { tlsMode: e.tlsMode } as JsonObject } } } : {}),
        },
      ],
    })),
  });
}

export interface ClusterOpts {
  readonly type?: keyof typeof Cluster_DiscoveryType;
  readonly serviceName?: string;
  readonly endpoints?: readonly Ep[];
  readonly transportSocket?: Init<typeof ClusterSchema>['transportSocket'];
  readonly matches?: { name: string; match: JsonObject; transportSocket?: Init<typeof ClusterSchema>['transportSocket'] }[];
}

export function cluster(name: string, o: ClusterOpts = {}): Cluster {
  const type = Cluster_DiscoveryType[o.type ?? 'EDS'];
  return create(ClusterSchema, {
    name,
    clusterDiscoveryType: { case: 'type', value: type },
    ...(type === Cluster_DiscoveryType.EDS ? { edsClusterConfig: { serviceName: o.serviceName ?? '' } } : {}),
    ...(o.endpoints && type !== Cluster_DiscoveryType.EDS ? { loadAssignment: assignment(name, o.endpoints) } : {}),
    ...(o.transportSocket ? { transportSocket: o.transportSocket } : {}),
    ...(o.matches ? { transportSocketMatches: o.matches } : {}),
  });
}

export function routeConfig(name: string, virtualHosts: VirtualHostInit[]): RouteConfiguration {
  return create(RouteConfigurationSchema, { name, virtualHosts });
}

/** A route to one cluster on a prefix. */
export const prefixRoute = (name: string, prefix: string, clusterName: string) => ({
  name,
  match: { pathSpecifier: { case: 'prefix' as const, value: prefix } },
  action: { case: 'route' as const, value: { clusterSpecifier: { case: 'cluster' as const, value: clusterName } } },
});

export function config(parts: Partial<SimulationConfig>): SimulationConfig {
  return { listeners: [], routes: [], clusters: [], endpoints: [], ...parts };
}
