/**
 * How Helm v4 builds a chart's `.Values` (pkg/cli/values, pkg/chart/common/util/coalesce.go):
 * `-f` files merged in order (maps recursively, anything else replaced), `--set` parsed into that
 * same map in order, then coalesced over the chart's values.yaml — the user's value wins, a user
 * `null` removes the chart's default, a `null` default is dropped.
 */
import { deepCopy } from '../template/index.js';
import { parseSetInto } from './strvals.js';

export type GoMap = Record<string, unknown>;

export function isMap(v: unknown): v is GoMap {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && Object.getPrototypeOf(v) === Object.prototype;
}

/** Helm's mergeMaps for -f files: b over a. */
export function mergeMaps(a: GoMap, b: GoMap): GoMap {
  const out: GoMap = { ...a };
  for (const [k, v] of Object.entries(b)) {
    const prev = out[k];
    out[k] = isMap(v) && isMap(prev) ? mergeMaps(prev, v) : v;
  }
  return out;
}

/** The user-supplied values of one release: files, then --set expressions. */
export function userValues(files: readonly GoMap[], sets: readonly string[]): GoMap {
  let base: GoMap = {};
  for (const f of files) base = mergeMaps(base, f);
  base = deepCopy(base) as GoMap;
  for (const s of sets) parseSetInto(s, base);
  return base;
}

function cleanNil(m: GoMap): void {
  for (const [k, v] of Object.entries(m)) {
    if (v === null) delete m[k];
    else if (isMap(v)) cleanNil(v);
  }
}

function coalesceTables(dst: GoMap, src: GoMap): void {
  const srcNonNil = new Set(Object.keys(src).filter((k) => src[k] !== null));
  for (const [k, v] of Object.entries(dst)) if (v === null) src[k] = null;
  for (const [k, v] of Object.entries(src)) {
    const has = Object.hasOwn(dst, k);
    const dv = dst[k];
    if (has && dv === null && srcNonNil.has(k)) delete dst[k];
    else if (!has) dst[k] = v;
    else if (isMap(v) && isMap(dv)) coalesceTables(dv, v);
  }
}

/** CoalesceValues(chart, user): the chart's defaults under the user's values (both copied). */
export function coalesceValues(defaults: GoMap, user: GoMap): GoMap {
  const v = deepCopy(user) as GoMap;
  const d = deepCopy(defaults) as GoMap;
  for (const [k, val] of Object.entries(d)) {
    if (Object.hasOwn(v, k)) {
      const uv = v[k];
      if (uv === null) delete v[k];
      else if (isMap(uv) && isMap(val)) {
        cleanNil(val);
        coalesceTables(uv, val);
      }
    } else if (val !== null) {
      if (isMap(val)) cleanNil(val);
      v[k] = val;
    }
  }
  return v;
}
