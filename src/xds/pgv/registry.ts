import { createRegistry, type Registry } from '@bufbuild/protobuf';
import { file_google_protobuf_struct, file_google_protobuf_wrappers } from '@bufbuild/protobuf/wkt';
import { file_envoy_extensions_filters_http_cors_v3_cors } from '../../gen/envoy/extensions/filters/http/cors/v3/cors_pb.js';
import { file_envoy_extensions_filters_network_sni_cluster_v3_sni_cluster } from '../../gen/envoy/extensions/filters/network/sni_cluster/v3/sni_cluster_pb.js';
import { file_envoy_extensions_transport_sockets_raw_buffer_v3_raw_buffer } from '../../gen/envoy/extensions/transport_sockets/raw_buffer/v3/raw_buffer_pb.js';
import { file_envoy_extensions_upstreams_http_v3_http_protocol_options } from '../../gen/envoy/extensions/upstreams/http/v3/http_protocol_options_pb.js';
import { xdsJsonRegistry } from '../json-registry.js';

/**
 * Extension configs meshpilot packs (or is about to) that the JSON registry does not list yet.
 * They belong in xdsJsonRegistry too; until they are there, validation adds them itself.
 */
const FILES_MISSING_FROM_JSON_REGISTRY = [
  file_envoy_extensions_filters_http_cors_v3_cors,
  file_envoy_extensions_filters_network_sni_cluster_v3_sni_cluster,
  file_envoy_extensions_transport_sockets_raw_buffer_v3_raw_buffer,
  file_envoy_extensions_upstreams_http_v3_http_protocol_options,
];

/**
 * Every type meshpilot can put in a google.protobuf.Any (the JSON registry's Envoy resources and
 * extension configs, plus the wrappers and Struct that metadata may carry), for validateMessage to
 * unpack typed_config and friends.
 */
export function envoyValidationRegistry(): Registry {
  return createRegistry(
    xdsJsonRegistry(),
    ...FILES_MISSING_FROM_JSON_REGISTRY,
    file_google_protobuf_struct,
    file_google_protobuf_wrappers,
  );
}
