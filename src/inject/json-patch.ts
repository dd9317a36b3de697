/**
 * JSON Patch (RFC 6902) between two JSON documents, as istiod's createPatch does with
 * gomodules.xyz/jsonpatch: the webhook answers with the operations that turn the pod it was sent
 * into the injected pod. Any correct patch will do for the API server; this one keeps list edits
 * small (common prefix and suffix are left alone) so that reviewing one stays easy.
 */

import type { JsonPatchOp, JsonValue } from '../util/json-patch.js';

/** RFC 6901 escaping of one reference token. */
export function escapePointerToken(token: string): string {
  return token.replace(/~/g, '~0').replace(/\//g, '~1');
}

function isObject(v: JsonValue | undefined): v is { [key: string]: JsonValue } {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function jsonEqual(a: JsonValue | undefined, b: JsonValue | undefined): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    return a.every((v, i) => jsonEqual(v, b[i]));
  }
  if (isObject(a)) {
    if (!isObject(b)) return false;
    const ka = Object.keys(a);
    if (ka.length !== Object.keys(b).length) return false;
    return ka.every((k) => Object.hasOwn(b, k) && jsonEqual(a[k], b[k]));
  }
  return false;
}

/** The operations that turn `from` into `to`, applied in order. */
export function createJsonPatch(from: JsonValue, to: JsonValue): JsonPatchOp[] {
  const ops: JsonPatchOp[] = [];
  diffValue(from, to, '', ops);
  return ops;
}

function diffValue(from: JsonValue, to: JsonValue, path: string, ops: JsonPatchOp[]): void {
  if (jsonEqual(from, to)) return;
  if (isObject(from) && isObject(to)) return diffObject(from, to, path, ops);
  if (Array.isArray(from) && Array.isArray(to)) return diffArray(from, to, path, ops);
  ops.push({ op: 'replace', path, value: to });
}

function diffObject(from: { [key: string]: JsonValue }, to: { [key: string]: JsonValue }, path: string, ops: JsonPatchOp[]): void {
  for (const key of Object.keys(from)) {
    if (!Object.hasOwn(to, key)) ops.push({ op: 'remove', path: `${path}/${escapePointerToken(key)}` });
  }
  for (const [key, value] of Object.entries(to)) {
    const child = `${path}/${escapePointerToken(key)}`;
    if (!Object.hasOwn(from, key)) ops.push({ op: 'add', path: child, value });
    else diffValue(from[key] as JsonValue, value, child, ops);
  }
}

function diffArray(from: JsonValue[], to: JsonValue[], path: string, ops: JsonPatchOp[]): void {
  let prefix = 0;
  while (prefix < from.length && prefix < to.length && jsonEqual(from[prefix], to[prefix])) prefix++;
  let suffix = 0;
  while (
    suffix < from.length - prefix &&
    suffix < to.length - prefix &&
    jsonEqual(from[from.length - 1 - suffix], to[to.length - 1 - suffix])
  )
    suffix++;
  const oldMiddle = from.length - prefix - suffix;
  const newMiddle = to.length - prefix - suffix;
  const common = Math.min(oldMiddle, newMiddle);
  // Elements at the same index are edited in place; the rest are inserted before the common
  // suffix, or removed from where the middle ends — indexes stay valid as each op applies.
  for (let i = 0; i < common; i++) diffValue(from[prefix + i] as JsonValue, to[prefix + i] as JsonValue, `${path}/${prefix + i}`, ops);
  for (let i = common; i < newMiddle; i++) ops.push({ op: 'add', path: `${path}/${prefix + i}`, value: to[prefix + i] as JsonValue });
  for (let i = common; i < oldMiddle; i++) ops.push({ op: 'remove', path: `${path}/${prefix + common}` });
}
