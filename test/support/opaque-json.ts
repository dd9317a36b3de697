/**
 * Proto3 JSON of Envoy resources where an Any of a type meshpilot's registry does not know (an
 * Istio-proxy extension, wasm, TypedStruct) keeps only its `@type` instead of failing: for golden
 * files captured from istiod and for comparing meshpilot's output with them.
 */
import { create, createFileRegistry, createRegistry, toJson, type DescMessage, type JsonValue, type Registry } from '@bufbuild/protobuf';
import { anyUnpack, FileDescriptorProtoSchema, type Any } from '@bufbuild/protobuf/wkt';

/** Every Any type URL inside `value` (recursing into the Anys the registry can unpack) it cannot unpack. */
function unknownAnyTypes(value: unknown, registry: Registry, out: Set<string>): void {
  if (value === null || typeof value !== 'object' || value instanceof Uint8Array) return;
  if (Array.isArray(value)) {
    for (const v of value) unknownAnyTypes(v, registry, out);
    return;
  }
  const o = value as Record<string, unknown>;
  if (o.$typeName === 'google.protobuf.Any') {
    const inner = anyUnpack(o as unknown as Any, registry);
    if (inner) unknownAnyTypes(inner, registry, out);
    else out.add((o as unknown as Any).typeUrl);
    return;
  }
  for (const v of Object.values(o)) unknownAnyTypes(v, registry, out);
}

/** An empty message named after the type URL: its JSON is `{"@type": url}`, its bytes are skipped. */
function placeholder(typeUrl: string): Registry {
  const full = typeUrl.slice(typeUrl.lastIndexOf('/') + 1);
  const dot = full.lastIndexOf('.');
  const proto = create(FileDescriptorProtoSchema, {
    name: `opaque/${full}.proto`,
    package: dot < 0 ? '' : full.slice(0, dot),
    syntax: 'proto3',
    messageType: [{ name: full.slice(dot + 1) }],
  });
  return createFileRegistry(proto, () => undefined);
}

/** Proto3 JSON of `msg`; Anys outside meshpilot's registry keep only their `@type` (and are listed). */
export function toOpaqueJson(schema: DescMessage, msg: never, base: Registry, opaque: Set<string>): JsonValue {
  const unknown = new Set<string>();
  unknownAnyTypes(msg, base, unknown);
  for (const t of unknown) opaque.add(t);
  const registry = unknown.size === 0 ? base : createRegistry(base, ...[...unknown].map(placeholder));
  return toJson(schema, msg, { registry });
}
