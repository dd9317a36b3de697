import { createRegistry, fromBinary, toJson, type JsonValue, type Registry } from '@bufbuild/protobuf';
import { AnySchema, anyUnpack, file_google_protobuf_struct, file_google_protobuf_wrappers } from '@bufbuild/protobuf/wkt';
import { file_envoy_admin_v3_config_dump } from '../gen/envoy/admin/v3/config_dump_pb.js';
import { file_envoy_admin_v3_config_dump_shared } from '../gen/envoy/admin/v3/config_dump_shared_pb.js';
import { file_envoy_config_cluster_v3_cluster } from '../gen/envoy/config/cluster/v3/cluster_pb.js';
import { file_envoy_config_core_v3_extension } from '../gen/envoy/config/core/v3/extension_pb.js';
import { file_envoy_extensions_filters_http_wasm_v3_wasm } from '../gen/envoy/extensions/filters/http/wasm/v3/wasm_pb.js';
import { file_envoy_config_endpoint_v3_endpoint } from '../gen/envoy/config/endpoint/v3/endpoint_pb.js';
import { file_envoy_config_listener_v3_listener } from '../gen/envoy/config/listener/v3/listener_pb.js';
import { file_envoy_config_route_v3_route } from '../gen/envoy/config/route/v3/route_pb.js';
import { file_envoy_extensions_filters_http_fault_v3_fault } from '../gen/envoy/extensions/filters/http/fault/v3/fault_pb.js';
import { file_envoy_extensions_filters_http_jwt_authn_v3_config } from '../gen/envoy/extensions/filters/http/jwt_authn/v3/config_pb.js';
import { file_envoy_extensions_filters_http_rbac_v3_rbac } from '../gen/envoy/extensions/filters/http/rbac/v3/rbac_pb.js';
import { file_envoy_extensions_filters_http_router_v3_router } from '../gen/envoy/extensions/filters/http/router/v3/router_pb.js';
import { file_envoy_extensions_filters_listener_http_inspector_v3_http_inspector } from '../gen/envoy/extensions/filters/listener/http_inspector/v3/http_inspector_pb.js';
import { file_envoy_extensions_filters_listener_original_dst_v3_original_dst } from '../gen/envoy/extensions/filters/listener/original_dst/v3/original_dst_pb.js';
import { file_envoy_extensions_filters_listener_tls_inspector_v3_tls_inspector } from '../gen/envoy/extensions/filters/listener/tls_inspector/v3/tls_inspector_pb.js';
import { file_envoy_extensions_filters_network_http_connection_manager_v3_http_connection_manager } from '../gen/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager_pb.js';
import { file_envoy_extensions_filters_network_rbac_v3_rbac } from '../gen/envoy/extensions/filters/network/rbac/v3/rbac_pb.js';
import { file_envoy_extensions_filters_network_tcp_proxy_v3_tcp_proxy } from '../gen/envoy/extensions/filters/network/tcp_proxy/v3/tcp_proxy_pb.js';
import { file_envoy_extensions_load_balancing_policies_ring_hash_v3_ring_hash } from '../gen/envoy/extensions/load_balancing_policies/ring_hash/v3/ring_hash_pb.js';
import { file_envoy_extensions_retry_host_previous_hosts_v3_previous_hosts } from '../gen/envoy/extensions/retry/host/previous_hosts/v3/previous_hosts_pb.js';
import { file_envoy_extensions_transport_sockets_tls_v3_secret } from '../gen/envoy/extensions/transport_sockets/tls/v3/secret_pb.js';
import { file_envoy_extensions_transport_sockets_tls_v3_tls } from '../gen/envoy/extensions/transport_sockets/tls/v3/tls_pb.js';
import { file_envoy_extensions_filters_http_cors_v3_cors } from '../gen/envoy/extensions/filters/http/cors/v3/cors_pb.js';
import { file_envoy_extensions_upstreams_http_v3_http_protocol_options } from '../gen/envoy/extensions/upstreams/http/v3/http_protocol_options_pb.js';
import { file_envoy_extensions_transport_sockets_raw_buffer_v3_raw_buffer } from '../gen/envoy/extensions/transport_sockets/raw_buffer/v3/raw_buffer_pb.js';
import { file_envoy_extensions_filters_network_sni_cluster_v3_sni_cluster } from '../gen/envoy/extensions/filters/network/sni_cluster/v3/sni_cluster_pb.js';
import { file_envoy_extensions_path_match_uri_template_v3_uri_template_match } from '../gen/envoy/extensions/path/match/uri_template/v3/uri_template_match_pb.js';
import { file_envoy_extensions_access_loggers_file_v3_file } from '../gen/envoy/extensions/access_loggers/file/v3/file_pb.js';
import { file_envoy_extensions_access_loggers_filters_cel_v3_cel } from '../gen/envoy/extensions/access_loggers/filters/cel/v3/cel_pb.js';
import { file_envoy_extensions_access_loggers_grpc_v3_als } from '../gen/envoy/extensions/access_loggers/grpc/v3/als_pb.js';
import { file_envoy_extensions_access_loggers_open_telemetry_v3_logs_service } from '../gen/envoy/extensions/access_loggers/open_telemetry/v3/logs_service_pb.js';
import { file_envoy_extensions_formatter_req_without_query_v3_req_without_query } from '../gen/envoy/extensions/formatter/req_without_query/v3/req_without_query_pb.js';
import { file_envoy_config_trace_v3_zipkin } from '../gen/envoy/config/trace/v3/zipkin_pb.js';
import { file_envoy_config_trace_v3_opentelemetry } from '../gen/envoy/config/trace/v3/opentelemetry_pb.js';
import { file_envoy_config_trace_v3_skywalking } from '../gen/envoy/config/trace/v3/skywalking_pb.js';
import { file_envoy_config_trace_v3_datadog } from '../gen/envoy/config/trace/v3/datadog_pb.js';
import { file_envoy_extensions_request_id_uuid_v3_uuid } from '../gen/envoy/extensions/request_id/uuid/v3/uuid_pb.js';
import { file_envoy_extensions_stats_config } from '../gen/envoy/extensions/stats/config_pb.js';
import { file_envoy_config_filter_http_alpn_v2alpha1_config } from '../gen/envoy/config/filter/http/alpn/v2alpha1/config_pb.js';
import { file_envoy_extensions_filters_http_grpc_stats_v3_config } from '../gen/envoy/extensions/filters/http/grpc_stats/v3/config_pb.js';
import { file_envoy_extensions_network_dns_resolver_cares_v3_cares_dns_resolver } from '../gen/envoy/extensions/network/dns_resolver/cares/v3/cares_dns_resolver_pb.js';
import { file_envoy_extensions_filters_http_set_filter_state_v3_set_filter_state } from '../gen/envoy/extensions/filters/http/set_filter_state/v3/set_filter_state_pb.js';
import { file_envoy_extensions_filters_network_set_filter_state_v3_set_filter_state } from '../gen/envoy/extensions/filters/network/set_filter_state/v3/set_filter_state_pb.js';
import { file_envoy_extensions_transport_sockets_internal_upstream_v3_internal_upstream } from '../gen/envoy/extensions/transport_sockets/internal_upstream/v3/internal_upstream_pb.js';
import { file_envoy_extensions_matching_common_inputs_network_v3_network_inputs } from '../gen/envoy/extensions/matching/common_inputs/network/v3/network_inputs_pb.js';
import { file_xds_type_matcher_v3_ip } from '../gen/xds/type/matcher/v3/ip_pb.js';
import { file_udpa_type_v1_typed_struct } from '../gen/udpa/type/v1/typed_struct_pb.js';
import { file_xds_type_v3_typed_struct } from '../gen/xds/type/v3/typed_struct_pb.js';

/**
 * Every message meshpilot may pack into a google.protobuf.Any, so proto3 JSON (config_dump, golden
 * files, debug output) can print typed `@type` objects instead of base64.
 */
export function xdsJsonRegistry(): Registry {
  return createRegistry(
    file_envoy_admin_v3_config_dump,
    file_envoy_admin_v3_config_dump_shared,
    file_envoy_config_cluster_v3_cluster,
    file_envoy_config_endpoint_v3_endpoint,
    file_envoy_config_listener_v3_listener,
    file_envoy_config_route_v3_route,
    file_envoy_extensions_filters_http_set_filter_state_v3_set_filter_state,
    file_envoy_extensions_filters_network_set_filter_state_v3_set_filter_state,
    file_envoy_extensions_transport_sockets_internal_upstream_v3_internal_upstream,
    file_envoy_extensions_matching_common_inputs_network_v3_network_inputs,
    file_xds_type_matcher_v3_ip,
    file_envoy_extensions_filters_http_fault_v3_fault,
    file_envoy_extensions_filters_http_jwt_authn_v3_config,
    file_envoy_extensions_filters_http_rbac_v3_rbac,
    file_envoy_extensions_filters_http_router_v3_router,
    file_envoy_extensions_filters_listener_http_inspector_v3_http_inspector,
    file_envoy_extensions_filters_listener_original_dst_v3_original_dst,
    file_envoy_extensions_filters_listener_tls_inspector_v3_tls_inspector,
    file_envoy_extensions_filters_network_http_connection_manager_v3_http_connection_manager,
    file_envoy_extensions_filters_network_rbac_v3_rbac,
    file_envoy_extensions_filters_network_tcp_proxy_v3_tcp_proxy,
    file_envoy_extensions_load_balancing_policies_ring_hash_v3_ring_hash,
    file_envoy_extensions_retry_host_previous_hosts_v3_previous_hosts,
    file_envoy_extensions_transport_sockets_tls_v3_secret,
    file_envoy_extensions_transport_sockets_tls_v3_tls,
    file_envoy_extensions_filters_http_cors_v3_cors,
    file_envoy_extensions_upstreams_http_v3_http_protocol_options,
    file_envoy_extensions_transport_sockets_raw_buffer_v3_raw_buffer,
    file_envoy_extensions_filters_network_sni_cluster_v3_sni_cluster,
    file_envoy_extensions_path_match_uri_template_v3_uri_template_match,
    // Telemetry: access loggers, tracers, request id, Istio's stats filter.
    file_envoy_extensions_access_loggers_file_v3_file,
    file_envoy_extensions_access_loggers_filters_cel_v3_cel,
    file_envoy_extensions_access_loggers_grpc_v3_als,
    file_envoy_extensions_access_loggers_open_telemetry_v3_logs_service,
    file_envoy_extensions_formatter_req_without_query_v3_req_without_query,
    file_envoy_config_trace_v3_zipkin,
    file_envoy_config_trace_v3_opentelemetry,
    file_envoy_config_trace_v3_skywalking,
    file_envoy_config_trace_v3_datadog,
    file_envoy_extensions_request_id_uuid_v3_uuid,
    file_envoy_extensions_stats_config,
    file_envoy_config_core_v3_extension,
    file_envoy_extensions_filters_http_wasm_v3_wasm,
    // Istio-proxy extensions istiod configures (metadata exchange as a TypedStruct, ALPN override),
    // gRPC stats, and the DNS resolver of DNS clusters.
    file_udpa_type_v1_typed_struct,
    file_xds_type_v3_typed_struct,
    file_envoy_config_filter_http_alpn_v2alpha1_config,
    file_envoy_extensions_filters_http_grpc_stats_v3_config,
    file_envoy_extensions_network_dns_resolver_cares_v3_cares_dns_resolver,
    file_google_protobuf_wrappers,
  );
}

/**
 * Every type meshpilot can put in a google.protobuf.Any (the JSON registry's Envoy resources and
 * extension configs, plus the wrappers and Struct that metadata may carry), for validateMessage to
 * unpack typed_config and friends.
 */
export function envoyValidationRegistry(): Registry {
  return createRegistry(xdsJsonRegistry(), file_google_protobuf_struct, file_google_protobuf_wrappers);
}

/** An encoded Any (as XdsResource.any holds it) as proto3 JSON with its `@type`. */
export function anyBytesToJson(registry: Registry, anyBytes: Uint8Array): JsonValue {
  const any = fromBinary(AnySchema, anyBytes);
  if (!anyUnpack(any, registry)) throw new Error(`type ${any.typeUrl} is not in the JSON registry`);
  return toJson(AnySchema, any, { registry });
}
