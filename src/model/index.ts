/** The public surface of src/model: what other folders import (SURFACE in scripts/layers.ts). */
export {
  BLACKHOLE_CLUSTER,
  buildClusterName,
  INBOUND_PASSTHROUGH_CLUSTER,
  inboundVipClusterName,
  parseClusterName,
  PASSTHROUGH_CLUSTER,
  sniDnatClusterName,
  parseInboundVipClusterName,
} from './cluster-name.js';
export { changeSet, instancesDep, type ChangeSet } from './dependency-tokens.js';
export { ApplyTo, type CompiledPatch, envoyFilterRegistries, Op, PatchContext } from './envoy-filter.js';
export { type Condition, ISTIO_GATEWAY_CONTROLLER, type ObjectStatus } from './gateway-api/conditions.js';
export { gammaParentHosts, type RouteKind } from './gateway-api/gamma-routes.js';
export { gatewayApiStatus } from './gateway-api/gateway-api-model.js';
export { ReferenceGrants } from './gateway-api/reference-grants.js';
export { type ProxyPatches } from './indexes/envoy-filter-index.js';
export { GatewayIndex, resolveGatewayName } from './indexes/gateway-index.js';
export { mtlsModeForPort, shouldAttach } from './indexes/security-index.js';
export { type ApplicableTelemetry } from './indexes/telemetry-index.js';
export { MESH_GATEWAY } from './indexes/virtual-service-index.js';
export { anyBytesToJson, envoyValidationRegistry, xdsJsonRegistry } from './json-registry.js';
export { type CredentialLookup, parseKubernetesSecret, type TlsCredential } from './kubernetes-secret.js';
export { lackingSummary, type ProxyExtensions } from './proxy-extensions.js';
export {
  compareGateways,
  DEFAULT_NETWORK_SETTINGS,
  GATEWAY_PORT_LABEL,
  networkGateways,
  NetworkGateways,
  type NetworkGateway,
  type NetworkSettings,
} from './networks.js';
export { isProxyless, parseProxy, type Proxy, type ProxyType } from './proxy.js';
export { AmbientIndex } from './ambient/ambient-index.js';
export { workloadPolicyNames, ztunnelAuthorizations } from './ambient/policies.js';
export { PushContext } from './push-context.js';
export { isProxyRequest, mergePushRequests, pushRequest, type PushRequest } from './push-request.js';
export { parseRegistryKey, registryKey } from './registry-keys.js';
export { type ServiceInstance } from './service-instances.js';
export { type SidecarScope } from './sidecar-scope.js';
export { proxyLabelsKey } from './view-keys.js';
export { XdsCache } from './xds-cache.js';
export { type WaypointKey, type WaypointScope, waypointScopeFor } from './waypoint-scope.js';
