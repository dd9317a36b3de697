/** The protobuf-es (src/gen) messages the proto-encode benchmark uses, under one namespace. */
export { ClusterSchema, Cluster_DiscoveryType, Cluster_LbPolicy, type Cluster } from '../../src/gen/envoy/config/cluster/v3/cluster_pb.js';
export { ApiConfigSource_ApiType, ApiVersion } from '../../src/gen/envoy/config/core/v3/config_source_pb.js';
export { TrafficDirection } from '../../src/gen/envoy/config/core/v3/base_pb.js';
export { FractionalPercent_DenominatorType } from '../../src/gen/envoy/type/v3/percent_pb.js';
export { RBAC_Action } from '../../src/gen/envoy/config/rbac/v3/rbac_pb.js';
export { ListenerSchema, type Listener } from '../../src/gen/envoy/config/listener/v3/listener_pb.js';
export {
  HttpConnectionManagerSchema,
  HttpConnectionManager_ForwardClientCertDetails,
  HttpConnectionManager_PathWithEscapedSlashesAction,
} from '../../src/gen/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager_pb.js';
export { RouterSchema } from '../../src/gen/envoy/extensions/filters/http/router/v3/router_pb.js';
export { HTTPFaultSchema } from '../../src/gen/envoy/extensions/filters/http/fault/v3/fault_pb.js';
export { RBACSchema as HttpRBACSchema } from '../../src/gen/envoy/extensions/filters/http/rbac/v3/rbac_pb.js';
export { TlsInspectorSchema } from '../../src/gen/envoy/extensions/filters/listener/tls_inspector/v3/tls_inspector_pb.js';
export { HttpInspectorSchema } from '../../src/gen/envoy/extensions/filters/listener/http_inspector/v3/http_inspector_pb.js';
export { UpstreamTlsContextSchema } from '../../src/gen/envoy/extensions/transport_sockets/tls/v3/tls_pb.js';
export { TlsParameters_TlsProtocol } from '../../src/gen/envoy/extensions/transport_sockets/tls/v3/common_pb.js';
