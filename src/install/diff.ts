/**
 * What an apply changed: the server's object before and after, compared field by field with what
 * the server maintains itself left out (managedFields, resourceVersion, generation, uid,
 * creationTimestamp, status), so an apply that changes nothing reports nothing.
 */
import type { KubeJsonObject } from '../config/sources/kube/index.js';

const SERVER_METADATA = ['managedFields', 'resourceVersion', 'generation', 'uid', 'creationTimestamp', 'selfLink'];

/** The object without the fields the server writes itself. */
export function userFields(obj: KubeJsonObject): Record<string, unknown> {
  const { status: _status, metadata, ...rest } = obj;
  const meta: Record<string, unknown> = { ...(metadata ?? {}) };
  for (const k of SERVER_METADATA) delete meta[k];
  return { ...rest, metadata: meta };
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `a.b`, `a["istio.io/rev"]`, `a[0]`: a field path as kubectl explains it, quoting keys that are not identifiers. */
function step(path: string, key: string | number): string {
  if (typeof key === 'number') return `${path}[${key}]`;
  if (/^[A-Za-z_$][\w$-]*$/.test(key)) return path === '' ? key : `${path}.${key}`;
  return `${path}[${JSON.stringify(key)}]`;
}

function collect(before: unknown, after: unknown, path: string, out: string[]): void {
  if (isPlainObject(before) && isPlainObject(after)) {
    const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort();
    for (const k of keys) collect(before[k], after[k], step(path, k), out);
    return;
  }
  if (Array.isArray(before) && Array.isArray(after) && before.length === after.length) {
    before.forEach((b, i) => collect(b, after[i], step(path, i), out));
    return;
  }
  if (JSON.stringify(before) !== JSON.stringify(after)) out.push(path);
}

/** The paths of the fields that differ between two versions of an object (sorted, deepest differing path). */
export function changedFields(before: KubeJsonObject, after: KubeJsonObject): string[] {
  const out: string[] = [];
  collect(userFields(before), userFields(after), '', out);
  return out;
}
