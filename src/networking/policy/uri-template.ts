import { fromBinary } from '@bufbuild/protobuf';
import type { Any } from '@bufbuild/protobuf/wkt';
import { UriTemplateMatchConfigSchema } from '../../gen/envoy/extensions/path/match/uri_template/v3/uri_template_match_pb.js';
import { packAny } from '../common.js';

/**
 * Envoy's `envoy.extensions.path.match.uri_template.v3.UriTemplateMatchConfig`, which istiod packs
 * into an RBAC `uri_template` permission for paths with `{*}` / `{**}`.
 */
export const URI_TEMPLATE_TYPE_URL = `type.googleapis.com/${UriTemplateMatchConfigSchema.typeName}`;

export function uriTemplateAny(pathTemplate: string): Any {
  return packAny(UriTemplateMatchConfigSchema, { pathTemplate });
}

/** The path template inside an Any built by uriTemplateAny (for tests and the traffic simulator). */
export function readUriTemplateAny(any: Any): string {
  if (any.typeUrl !== URI_TEMPLATE_TYPE_URL) throw new Error(`not a UriTemplateMatchConfig: ${any.typeUrl}`);
  return fromBinary(UriTemplateMatchConfigSchema, any.value).pathTemplate;
}

/** istiod's rewrite of Istio's `{*}` / `{**}` path operators into Envoy's `*` / `**`. */
export function sanitizePathTemplate(path: string): string {
  return path.replaceAll('{**}', '**').replaceAll('{*}', '*');
}

/** True when a policy path uses Istio's path template operators. */
export const containsPathTemplate = (path: string): boolean => path.includes('{*}') || path.includes('{**}');
