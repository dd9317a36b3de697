/** The ts-proto (bench/proto/ts-proto-gen) messages the proto-encode benchmark uses, under one namespace. */
export { Cluster, Cluster_DiscoveryType, Cluster_LbPolicy, type MessageFns } from './ts-proto-gen/envoy/config/cluster/v3/cluster.js';
export { ApiConfigSource_ApiType, ApiVersion } from './ts-proto-gen/envoy/config/core/v3/config_source.js';
export { TrafficDirection } from './ts-proto-gen/envoy/config/core/v3/base.js';
export { FractionalPercent_DenominatorType } from './ts-proto-gen/envoy/type/v3/percent.js';
export { RBAC_Action } from './ts-proto-gen/envoy/config/rbac/v3/rbac.js';
export { Listener } from './ts-proto-gen/envoy/config/listener/v3/listener.js';
export {
  HttpConnectionManager,
  HttpConnectionManager_ForwardClientCertDetails,
  HttpConnectionManager_PathWithEscapedSlashesAction,
} from './ts-proto-gen/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.js';
export { Router } from './ts-proto-gen/envoy/extensions/filters/http/router/v3/router.js';
export { HTTPFault } from './ts-proto-gen/envoy/extensions/filters/http/fault/v3/fault.js';
export { RBAC as HttpRBAC } from './ts-proto-gen/envoy/extensions/filters/http/rbac/v3/rbac.js';
export { TlsInspector } from './ts-proto-gen/envoy/extensions/filters/listener/tls_inspector/v3/tls_inspector.js';
export { HttpInspector } from './ts-proto-gen/envoy/extensions/filters/listener/http_inspector/v3/http_inspector.js';
export { UpstreamTlsContext } from './ts-proto-gen/envoy/extensions/transport_sockets/tls/v3/tls.js';
export { TlsParameters_TlsProtocol } from './ts-proto-gen/envoy/extensions/transport_sockets/tls/v3/common.js';
export { Any } from './ts-proto-gen/google/protobuf/any.js';
