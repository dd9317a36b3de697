import { createRegistry, type Registry } from '@bufbuild/protobuf';
import { file_google_protobuf_struct, file_google_protobuf_wrappers } from '@bufbuild/protobuf/wkt';
import { xdsJsonRegistry } from '../json-registry.js';

/**
 * Every type meshpilot can put in a google.protobuf.Any (the JSON registry's Envoy resources and
 * extension configs, plus the wrappers and Struct that metadata may carry), for validateMessage to
 * unpack typed_config and friends.
 */
export function envoyValidationRegistry(): Registry {
  return createRegistry(xdsJsonRegistry(), file_google_protobuf_struct, file_google_protobuf_wrappers);
}
