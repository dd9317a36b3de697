/** JSON Patch (RFC 6902) operations, the one definition: the injector's pod patch, the webhook caBundle patch. */
import type { JsonValue } from '@bufbuild/protobuf';

export type { JsonValue };

/** One JSON Patch operation, of the kinds meshpilot sends. */
export type JsonPatchOp =
  | { readonly op: 'add' | 'replace' | 'test'; readonly path: string; readonly value: JsonValue }
  | { readonly op: 'remove'; readonly path: string };
