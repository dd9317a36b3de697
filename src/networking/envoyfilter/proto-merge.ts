import { clone, create, fromBinary, toBinary, type DescMessage, type MessageShape, type Registry } from '@bufbuild/protobuf';
import { reflect, type ReflectMessage } from '@bufbuild/protobuf/reflect';
import { anyPack, anyUnpack, isWrapperDesc, type Any } from '@bufbuild/protobuf/wkt';

/**
 * istiod's merge (pkg/proto/merge): Go's proto.Merge — set scalars overwrite, messages merge
 * field by field, lists append, map entries replace — except that a google.protobuf.Duration is
 * replaced whole, and with `replaceList` a list set in `src` replaces the one in `dst`
 * (MERGE_AND_REPLACE_LIST). `src` is cloned first: the patch value stays untouched.
 */
export function mergeMessage<D extends DescMessage>(schema: D, dst: MessageShape<D>, src: MessageShape<D>, replaceList = false): void {
  mergeReflect(reflect(schema, dst), reflect(schema, clone(schema, src)), replaceList);
}

const DURATION = 'google.protobuf.Duration';

function mergeReflect(dst: ReflectMessage, src: ReflectMessage, replaceList: boolean): void {
  for (const f of src.fields) {
    if (!src.isSet(f)) continue;
    switch (f.fieldKind) {
      case 'list': {
        const d = dst.get(f);
        if (replaceList) d.clear();
        for (const v of src.get(f)) d.add(v);
        break;
      }
      case 'map': {
        const d = dst.get(f);
        for (const [k, v] of src.get(f)) d.set(k, v);
        break;
      }
      case 'message': {
        // Wrappers are plain values in protobuf-es: replacing equals merging their one field.
        if (f.message.typeName === DURATION || isWrapperDesc(f.message) || !dst.isSet(f)) dst.set(f, src.get(f));
        else {
          // A oneof member of another case is replaced; the same message case merges.
          mergeReflect(dst.get(f), src.get(f), replaceList);
        }
        break;
      }
      default:
        dst.set(f, src.get(f));
    }
  }
}

/**
 * istiod's MergeAnyWithAny: both Anys unpacked, merged as messages and packed again. Undefined
 * when either cannot be unpacked or they hold different types (istiod keeps the original then).
 */
export function mergeAnyWithAny(dst: Any, src: Any, registry: Registry): Any | undefined {
  if (dst.typeUrl !== src.typeUrl) return undefined;
  const desc = registry.getMessage(dst.typeUrl.slice(dst.typeUrl.lastIndexOf('/') + 1));
  if (!desc) return undefined;
  const d = anyUnpack(dst, registry);
  const s = anyUnpack(src, registry);
  if (!d || !s) return undefined;
  mergeMessage(desc, d, s);
  return anyPack(desc, d);
}

/** A deep copy through the wire format (keeps unknown Any payloads byte for byte). */
export function copyMessage<D extends DescMessage>(schema: D, m: MessageShape<D>): MessageShape<D> {
  return fromBinary(schema, toBinary(schema, m));
}

export { create };
