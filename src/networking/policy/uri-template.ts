import { create } from '@bufbuild/protobuf';
import { AnySchema, type Any } from '@bufbuild/protobuf/wkt';
import { BinaryReader, BinaryWriter, WireType } from '@bufbuild/protobuf/wire';

/**
 * Envoy's `envoy.extensions.path.match.uri_template.v3.UriTemplateMatchConfig`
 * (`string path_template = 1`), which istiod packs into an RBAC `uri_template` permission for
 * paths with `{*}` / `{**}`. That proto is not generated into src/gen yet, so its one field is
 * written (and read back) by hand; the bytes are exactly what the generated message would produce.
 */
export const URI_TEMPLATE_TYPE_URL = 'type.googleapis.com/envoy.extensions.path.match.uri_template.v3.UriTemplateMatchConfig';

export function uriTemplateAny(pathTemplate: string): Any {
  const value = new BinaryWriter().tag(1, WireType.LengthDelimited).string(pathTemplate).finish();
  return create(AnySchema, { typeUrl: URI_TEMPLATE_TYPE_URL, value });
}

/** The path template inside an Any built by uriTemplateAny (for tests and the traffic simulator). */
export function readUriTemplateAny(any: Any): string {
  if (any.typeUrl !== URI_TEMPLATE_TYPE_URL) throw new Error(`not a UriTemplateMatchConfig: ${any.typeUrl}`);
  const reader = new BinaryReader(any.value);
  let template = '';
  while (reader.pos < reader.len) {
    const [field, wireType] = reader.tag();
    if (field === 1 && wireType === WireType.LengthDelimited) template = reader.string();
    else reader.skip(wireType);
  }
  return template;
}

/** istiod's rewrite of Istio's `{*}` / `{**}` path operators into Envoy's `*` / `**`. */
export function sanitizePathTemplate(path: string): string {
  return path.replaceAll('{**}', '**').replaceAll('{*}', '*');
}

/** True when a policy path uses Istio's path template operators. */
export const containsPathTemplate = (path: string): boolean => path.includes('{*}') || path.includes('{**}');
