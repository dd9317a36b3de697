/**
 * Strategic merge of a (partial) Pod into a Pod, as istiod merges each rendered template into the
 * pod (k8s.io/apimachinery strategicpatch with corev1.Pod's patch metadata): maps merge key by
 * key, a `null` in the patch deletes the key, lists with a merge key (containers by name, env by
 * name, volumeMounts by mountPath, …) merge element by element and append new elements, every
 * other list is replaced, and elements are ordered as apimachinery orders them. Supported
 * directives: `$patch: replace` on a map or in a merge list, `$patch: delete` on a merge-list element.
 */
import type { JsonValue } from '../util/json-patch.js';

type JsonObject = { [key: string]: JsonValue };

/**
 * corev1 `patchMergeKey`s by the field name of the list. Pod field names are unique enough that
 * the name alone says which list it is (Service `ports` never reach a Pod merge).
 */
export const POD_MERGE_KEYS: Readonly<Record<string, string>> = {
  containers: 'name',
  initContainers: 'name',
  ephemeralContainers: 'name',
  volumes: 'name',
  imagePullSecrets: 'name',
  resourceClaims: 'name',
  schedulingGates: 'name',
  env: 'name',
  ports: 'containerPort',
  volumeMounts: 'mountPath',
  volumeDevices: 'devicePath',
  hostAliases: 'ip',
  topologySpreadConstraints: 'topologyKey',
  ownerReferences: 'uid',
};

/** Lists of scalars with patchStrategy merge: the union, original order first. */
const MERGED_SCALAR_LISTS = new Set(['finalizers']);

function isObject(v: JsonValue | undefined): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Drops `null` members: a new element's nulls mean "unset", as Go's typed decode reads them. */
export function withoutNulls(v: JsonValue): JsonValue {
  if (Array.isArray(v)) return v.filter((e) => e !== null).map(withoutNulls);
  if (isObject(v)) {
    const out: JsonObject = {};
    for (const [k, e] of Object.entries(v)) if (e !== null && !k.startsWith('$')) out[k] = withoutNulls(e);
    return out;
  }
  return v;
}

/**
 * `original` with `patch` merged in; neither input is changed. `mergeKeys` names each merge list's
 * key by field name (a Pod's by default; a Service's `ports` merge by `port`).
 */
export function strategicMerge(
  original: JsonObject,
  patch: JsonObject,
  mergeKeys: Readonly<Record<string, string>> = POD_MERGE_KEYS,
): JsonObject {
  return mergeObject(original, patch, mergeKeys);
}

function mergeObject(original: JsonObject, patch: JsonObject, keys: Readonly<Record<string, string>>): JsonObject {
  if (patch.$patch === 'replace') return withoutNulls(patch) as JsonObject;
  const out: JsonObject = { ...original };
  for (const [key, value] of Object.entries(patch)) {
    if (key.startsWith('$')) continue;
    if (value === null) {
      delete out[key];
      continue;
    }
    const current = out[key];
    if (isObject(value) && isObject(current)) out[key] = mergeObject(current, value, keys);
    else if (Array.isArray(value) && Array.isArray(current)) out[key] = mergeList(key, current, value, keys);
    else if (Array.isArray(value)) out[key] = withoutNulls(value.filter((e) => !(isObject(e) && e.$patch === 'delete')));
    else out[key] = withoutNulls(value);
  }
  return out;
}

function mergeList(field: string, original: JsonValue[], patch: JsonValue[], keys: Readonly<Record<string, string>>): JsonValue[] {
  if (MERGED_SCALAR_LISTS.has(field)) {
    const merged = [...original, ...patch.filter((p, i) => !original.includes(p) && patch.indexOf(p) === i)];
    return enforceOrder(merged, patch, original, (v) => v);
  }
  const mergeKey = keys[field];
  if (mergeKey === undefined || !patch.every(isObject)) return withoutNulls(patch) as JsonValue[];
  const keyOf = (v: JsonValue): JsonValue | undefined => (isObject(v) ? v[mergeKey] : undefined);
  const items = patch as JsonObject[];
  // `$patch: replace` in a list replaces it with the other elements; `$patch: delete` removes by key.
  if (items.some((i) => i.$patch === 'replace')) return withoutNulls(items.filter((i) => i.$patch === undefined)) as JsonValue[];
  const deleted = new Set(items.filter((i) => i.$patch === 'delete').map((i) => i[mergeKey]));
  const base = original.filter((o) => !deleted.has(keyOf(o) as JsonValue));
  const rest = items.filter((i) => i.$patch === undefined);
  const out = [...base];
  for (const item of rest) {
    const key = item[mergeKey];
    const at = out.findIndex((o) => key !== undefined && keyOf(o) === key);
    if (at >= 0) out[at] = mergeObject(out[at] as JsonObject, item, keys);
    else out.push(withoutNulls(item));
  }
  return enforceOrder(out, rest, base, keyOf);
}

/**
 * apimachinery's normalizeElementOrder: elements named in the patch keep the patch's order, the
 * others the original's, and the two are interleaved by their original positions — a new element
 * goes before the original-only ones still to come. (Why injected volumes precede the pod's own.)
 */
function enforceOrder(
  merged: JsonValue[],
  patch: JsonValue[],
  original: JsonValue[],
  keyOf: (v: JsonValue) => JsonValue | undefined,
): JsonValue[] {
  const indexIn = (list: JsonValue[], v: JsonValue): number => {
    const k = keyOf(v);
    return list.findIndex((e) => keyOf(e) === k);
  };
  const inPatch = (v: JsonValue): boolean => indexIn(patch, v) >= 0;
  const patchItems = merged.filter(inPatch).sort((a, b) => indexIn(patch, a) - indexIn(patch, b));
  const serverOnly = merged.filter((v) => !inPatch(v)).sort((a, b) => indexIn(original, a) - indexIn(original, b));
  const out: JsonValue[] = [];
  let i = 0;
  let j = 0;
  while (i < serverOnly.length || j < patchItems.length) {
    const left = serverOnly[i];
    const right = patchItems[j];
    if (right === undefined) {
      out.push(left as JsonValue);
      i++;
    } else if (left === undefined) {
      out.push(right);
      j++;
    } else {
      const li = indexIn(original, left);
      const ri = indexIn(original, right);
      if (li >= 0 && ri >= 0 && li < ri) {
        out.push(left);
        i++;
      } else {
        out.push(right);
        j++;
      }
    }
  }
  return out;
}
