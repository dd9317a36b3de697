/** xDS type URLs served by meshpilot (Envoy v3 and Istio's own). */
export const TypeUrl = {
  Cluster: 'type.googleapis.com/envoy.config.cluster.v3.Cluster',
  Listener: 'type.googleapis.com/envoy.config.listener.v3.Listener',
  RouteConfiguration: 'type.googleapis.com/envoy.config.route.v3.RouteConfiguration',
  ClusterLoadAssignment: 'type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment',
  Secret: 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret',
  NameTable: 'type.googleapis.com/istio.networking.nds.v1.NameTable',
  ExtensionConfiguration: 'type.googleapis.com/envoy.config.core.v3.TypedExtensionConfig',
  /** Ambient's workload discovery (ztunnel): istio.workload.Address, a Workload or a Service. Delta only. */
  Address: 'type.googleapis.com/istio.workload.Address',
  /** Ambient's policies (ztunnel): istio.security.Authorization. */
  Authorization: 'type.googleapis.com/istio.security.Authorization',
  /** The agent's health reports (a request, never answered): no error_detail = healthy. */
  HealthInformation: 'type.googleapis.com/istio.v1.HealthInformation',
  DebugSyncz: 'istio.io/debug/syncz',
  DebugConfigDump: 'istio.io/debug/config_dump',
} as const;

export type KnownTypeUrl = (typeof TypeUrl)[keyof typeof TypeUrl];

// A Map, not an object literal: a client's type URL "constructor" or "__proto__" must not find
// Object.prototype's members (the fuzzer sent one, and stats got a function for a type name).
const SHORT = new Map<string, string>([
  [TypeUrl.Cluster, 'CDS'],
  [TypeUrl.Listener, 'LDS'],
  [TypeUrl.RouteConfiguration, 'RDS'],
  [TypeUrl.ClusterLoadAssignment, 'EDS'],
  [TypeUrl.Secret, 'SDS'],
  [TypeUrl.NameTable, 'NDS'],
  [TypeUrl.ExtensionConfiguration, 'ECDS'],
  [TypeUrl.Address, 'WDS'],
  [TypeUrl.Authorization, 'WADS'],
]);

/** istiod's short names (CDS, LDS …) for logs and metric labels; unknown types keep their URL. */
export function shortType(typeUrl: string): string {
  return SHORT.get(typeUrl) ?? typeUrl;
}

/** istiod's push order: clusters before the endpoints and listeners that use them (make before break). */
export const PUSH_ORDER: readonly string[] = [
  TypeUrl.Cluster,
  TypeUrl.ClusterLoadAssignment,
  TypeUrl.Listener,
  TypeUrl.RouteConfiguration,
  TypeUrl.Secret,
  TypeUrl.NameTable,
  TypeUrl.Address,
  TypeUrl.Authorization,
];

/** Types where an empty first request means "everything" (Envoy's legacy wildcard; ztunnel's types too). */
export function isWildcardType(typeUrl: string): boolean {
  return (
    typeUrl === TypeUrl.Cluster ||
    typeUrl === TypeUrl.Listener ||
    typeUrl === TypeUrl.Secret ||
    typeUrl === TypeUrl.NameTable ||
    typeUrl === TypeUrl.Address ||
    typeUrl === TypeUrl.Authorization
  );
}
