/**
 * Strategic merge of a (partial) Pod into a Pod, as istiod merges each rendered template into the
 * pod (k8s.io/apimachinery strategicpatch with corev1.Pod's patch metadata): maps merge key by
 * key, a `null` in the patch deletes the key, lists with a merge key (containers by name, env by
 * name, volumeMounts by mountPath, …) merge element by element and append new elements, every
 * other list is replaced. Supported directives: `$patch: replace` on a map, `$patch: delete` on a
 * merge-list element.
 */
import type { JsonValue } from './json-patch.js';

type JsonObject = { [key: string]: JsonValue };

/**
 * corev1 `patchMergeKey`s by the field name of the list. Pod field names are unique enough that
 * the name alone says which list it is (Service `ports` never reach a Pod merge).
 */
const MERGE_KEYS: Readonly<Record<string, string>> = {
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

/** `original` with `patch` merged in; neither input is changed. */
export function strategicMerge(original: JsonObject, patch: JsonObject): JsonObject {
  return mergeObject(original, patch);
}

function mergeObject(original: JsonObject, patch: JsonObject): JsonObject {
  if (patch.$patch === 'replace') return withoutNulls(patch) as JsonObject;
  const out: JsonObject = { ...original };
  for (const [key, value] of Object.entries(patch)) {
    if (key.startsWith('$')) continue;
    if (value === null) {
      delete out[key];
      continue;
    }
    const current = out[key];
    if (isObject(value) && isObject(current)) out[key] = mergeObject(current, value);
    else if (Array.isArray(value) && Array.isArray(current)) out[key] = mergeList(key, current, value);
    else if (Array.isArray(value)) out[key] = withoutNulls(value.filter((e) => !(isObject(e) && e.$patch === 'delete')));
    else out[key] = withoutNulls(value);
  }
  return out;
}

function mergeList(field: string, original: JsonValue[], patch: JsonValue[]): JsonValue[] {
  if (MERGED_SCALAR_LISTS.has(field)) return [...original, ...patch.filter((p) => !original.some((o) => o === p))];
  const mergeKey = MERGE_KEYS[field];
  if (mergeKey === undefined || !patch.every(isObject)) return withoutNulls(patch) as JsonValue[];
  const out = [...original];
  for (const item of patch as JsonObject[]) {
    const key = item[mergeKey];
    const at = out.findIndex((o) => isObject(o) && key !== undefined && o[mergeKey] === key);
    if (item.$patch === 'delete') {
      if (at >= 0) out.splice(at, 1);
    } else if (at >= 0) {
      out[at] = mergeObject(out[at] as JsonObject, item);
    } else {
      out.push(withoutNulls(item));
    }
  }
  return out;
}
