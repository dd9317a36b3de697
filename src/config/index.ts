/** The public surface of src/config: what other folders import (SURFACE in scripts/layers.ts). */
export {
  type Config,
  type ConfigError,
  type ConfigKey,
  type ConfigStatus,
  type IstioCondition,
  conditionOf,
  configKeyString,
  type ConfigOrigin,
  formatConfigError,
} from './config.js';
export {
  type BackendRef,
  type GatewayClassSpec,
  type GatewaySpec,
  type GRPCRouteMatch,
  type GRPCRouteRule,
  type GRPCRouteSpec,
  type HeaderMatch,
  type HeaderModifier,
  type HTTPRouteMatch,
  type HTTPRouteRule,
  type HTTPRouteSpec,
  type L4RouteRule,
  type Listener,
  type ParentReference,
  type PathModifier,
  type ReferenceGrantSpec,
  type RouteFilter,
  type RouteGroupKind,
  type TCPRouteSpec,
  type TLSRouteSpec,
} from './gateway-api/types.js';
export { byCreationTime, byCreationTimeGatewayApi, inCreationOrder, oldestConfig } from './creation-order.js';
export { specJson } from './gateway-api/validate.js';
export { hostMatches, hostsOverlap, isVisible, isWildcard, resolveShortName } from './hosts.js';
export { apiKindOf, apiVersionOf, KIND_NAMES, type KindInfo, type KindName, KINDS, splitApiVersion } from './kinds.js';
export {
  anyLabelSelectorMatches,
  isEmptyLabels,
  isEmptyLabelSelector,
  type Labels,
  type LabelSelector,
  labelSelectorMatches,
  type LabelSelectorRequirement,
  labelsSubsetOf,
  workloadEntryLabels,
} from './labels.js';
export { atFieldLines, isJsonFile, parseConfigFile } from './parse.js';
export type { ParsedFile, ParsedTrees, ParsedValue } from './parse.js';
export { FileSource } from './sources/file-source.js';
export { MemorySource, type MemorySourceOptions } from './sources/memory-source.js';
export { formatOrigin } from './sources/file-tracker.js';
export { type ConfigSnapshot, type ConfigSource } from './store-types.js';
export { changedIdsBetween, ConfigStore } from './store.js';
export { isHTTPProtocol, isIPAddress, parseProtocol } from './validation/common.js';
export { type RawObject, readKey, validateObject, validateObjectWithWarnings, salvageObject } from './validation/index.js';
export { Issues } from './validation/issues.js';
export { decodeSpec } from './validation/schema.js';
export { wasmUrlScheme } from './validation/wasm-plugin.js';
export { parseMeshConfig, type MeshConfigFile } from './mesh/mesh-config-file.js';
export { type MeshConfig } from './mesh/mesh-config.js';
export { serviceEntryVisibilityFor, type ServiceEntryVisibility, type ServiceVisibility } from './mesh/service-entry-visibility.js';
export { ClusterLocalHosts, type ServiceSetting } from './mesh/cluster-local.js';
export {
  EMPTY_MESH_NETWORKS,
  parseMeshNetworks,
  type MeshNetwork,
  type MeshNetworkEndpoints,
  type MeshNetworkGateway,
  type MeshNetworks,
  type MeshNetworksFile,
} from './mesh/mesh-networks.js';
export { type DefaultProviders, type ExtensionProvider, type MeshTelemetry } from './mesh/mesh-telemetry.js';
export { boundedErrors, ERROR_BOUNDS } from './error-bounds.js';
export { DEFAULT_PARSE_LIMITS, fileTooLargeMessage, parseBoundedYaml } from './parse-limits.js';
