/**
 * Whole-resource comparison of two Envoy configs (proto3 JSON): every resource flattened to
 * `path → value` leaves, resources matched by type and name, every leaf compared. Unlike the
 * facet comparison (istiod-compare.ts) nothing is left out; what may differ is listed by the
 * caller (deliberate.ts).
 */
import type { JsonValue } from '@bufbuild/protobuf';

type J = { readonly [k: string]: JsonValue };
const isObj = (v: JsonValue | undefined): v is J => v !== null && typeof v === 'object' && !Array.isArray(v);

/** One resource of one proxy: `type` is a short section name (listener, route, cluster, endpoint, ecds, hcm). */
export interface Resource {
  readonly type: string;
  readonly name: string;
  readonly json: JsonValue;
}

/** Leaves of a resource: path → JSON of a scalar (or of an empty object/list, which Envoy reads as "set"). */
export type Leaves = Map<string, string>;

/**
 * An element's key in its list: its `name` when it has one (so an insertion does not shift every
 * later element), the canonical filter-chain match for unnamed chains, else its index. Lists keyed
 * by name also get an `@order` leaf, so a reordering still counts as one difference.
 */
function elementKey(v: JsonValue, i: number): string {
  // Brackets would end the path segment early: a key writes them as parentheses.
  const safe = (s: string): string => s.replace(/\[/g, '(').replace(/\]/g, ')');
  if (isObj(v) && typeof v.name === 'string' && v.name !== '') return safe(v.name);
  if (isObj(v) && v.filterChainMatch !== undefined) return safe(`match=${JSON.stringify(sortKeys(v.filterChainMatch))}`);
  return String(i);
}

export function sortKeys(v: JsonValue): JsonValue {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (isObj(v))
    return Object.fromEntries(
      Object.keys(v)
        .sort()
        .map((k) => [k, sortKeys(v[k]!)]),
    );
  return v;
}

export function flatten(v: JsonValue, path = '', out: Leaves = new Map()): Leaves {
  if (Array.isArray(v)) {
    if (v.length === 0) out.set(path, '[]');
    const seen = new Map<string, number>();
    const keys = v.map((x, i) => {
      const k = elementKey(x, i);
      const n = (seen.get(k) ?? 0) + 1;
      seen.set(k, n);
      return n > 1 ? `${k}#${n}` : k;
    });
    if (v.some((x, i) => keys[i] !== String(i)) && v.length > 1) out.set(`${path}.@order`, keys.join(' | '));
    v.forEach((x, i) => flatten(x, `${path}[${keys[i]!}]`, out));
  } else if (isObj(v)) {
    const ks = Object.keys(v);
    if (ks.length === 0) out.set(path, '{}');
    for (const k of ks) flatten(v[k]!, path === '' ? k : `${path}.${k}`, out);
  } else {
    out.set(path, JSON.stringify(v));
  }
  return out;
}

/** One leaf (or a whole resource, path `''`) that differs; `undefined` = absent on that side. */
export interface LeafDiff {
  readonly type: string;
  readonly name: string;
  readonly path: string;
  readonly istiod: string | undefined;
  readonly meshpilot: string | undefined;
  /** Leaves this difference stands for (a resource present on one side only counts all of its leaves). */
  readonly weight: number;
}

export interface Comparison {
  readonly leaves: number;
  readonly equalLeaves: number;
  readonly resources: number;
  readonly equalResources: number;
  readonly diffs: LeafDiff[];
}

const key = (r: Resource): string => `${r.type} ${r.name}`;

/** Compares two proxies' resources: leaves counted over the union of both sides' leaf paths. */
export function compareResources(istiod: readonly Resource[], meshpilot: readonly Resource[]): Comparison {
  const a = new Map(istiod.map((r) => [key(r), r]));
  const b = new Map(meshpilot.map((r) => [key(r), r]));
  let leaves = 0;
  let equalLeaves = 0;
  let equalResources = 0;
  const diffs: LeafDiff[] = [];
  for (const k of [...new Set([...a.keys(), ...b.keys()])].sort()) {
    const ra = a.get(k);
    const rb = b.get(k);
    const r = (ra ?? rb)!;
    if (!ra || !rb) {
      const n = flatten(r.json).size;
      leaves += n;
      diffs.push({
        type: r.type,
        name: r.name,
        path: '',
        istiod: ra ? 'present' : undefined,
        meshpilot: rb ? 'present' : undefined,
        weight: n,
      });
      continue;
    }
    const la = flatten(ra.json);
    const lb = flatten(rb.json);
    let same = true;
    for (const p of new Set([...la.keys(), ...lb.keys()])) {
      leaves++;
      const va = la.get(p);
      const vb = lb.get(p);
      if (va === vb) equalLeaves++;
      else {
        same = false;
        diffs.push({ type: r.type, name: r.name, path: p, istiod: va, meshpilot: vb, weight: 1 });
      }
    }
    if (same) equalResources++;
  }
  return { leaves, equalLeaves, resources: new Set([...a.keys(), ...b.keys()]).size, equalResources, diffs };
}

/** The path with list keys blanked: groups the same difference across resources and elements. */
export const pathShape = (d: LeafDiff): string => `${d.type} ${d.path.replace(/\[[^\]]*\]/g, '[*]')}`;

export const percent = (part: number, whole: number): string => (whole === 0 ? '100.0' : ((100 * part) / whole).toFixed(1));
