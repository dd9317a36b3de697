/**
 * What a patch changed in one resource, as path → new value, so two implementations' patches can
 * be compared where their unpatched output differs elsewhere. Lists of named elements (filters,
 * chains, virtual hosts, routes) are keyed by name, with their name order kept apart (`#order`)
 * so it can be compared on the names both sides have; other lists record the elements added and
 * removed (`[+]`, `[-]`); anything else its new value (`<removed>` when gone).
 */
import type { JsonValue } from '@bufbuild/protobuf';

export type Changes = Map<string, string>;

const isObject = (v: JsonValue | undefined): v is { [k: string]: JsonValue } => typeof v === 'object' && v !== null && !Array.isArray(v);

export function canonical(v: JsonValue | undefined): string {
  if (v === undefined) return '<removed>';
  return JSON.stringify(v, (_k, x: unknown) =>
    x && typeof x === 'object' && !Array.isArray(x)
      ? Object.fromEntries(Object.entries(x as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : x,
  );
}

const nameOf = (e: JsonValue): string | undefined => (isObject(e) && typeof e.name === 'string' && e.name !== '' ? e.name : undefined);

/**
 * How list elements are keyed: by name, except filter chains, which the two implementations name
 * differently (istiod leaves outbound chains unnamed, calls inbound ones `0.0.0.0_<port>`): those
 * by their filter_chain_match, which says what traffic the chain takes.
 */
const keyFor =
  (path: string) =>
  (e: JsonValue): string | undefined => {
    if (path.endsWith('.filterChains')) return isObject(e) ? `match=${canonical(e.filterChainMatch ?? {})}` : undefined;
    return nameOf(e);
  };

/** Multiset difference of unnamed list elements, by canonical form. */
function addedRemoved(before: readonly JsonValue[], after: readonly JsonValue[], path: string, out: Changes): void {
  const count = (l: readonly JsonValue[]): Map<string, number> => {
    const m = new Map<string, number>();
    for (const e of l) m.set(canonical(e), (m.get(canonical(e)) ?? 0) + 1);
    return m;
  };
  const b = count(before);
  const a = count(after);
  const added = [...a].flatMap(([k, n]) => Array<string>(Math.max(0, n - (b.get(k) ?? 0))).fill(k)).sort();
  const removed = [...b].flatMap(([k, n]) => Array<string>(Math.max(0, n - (a.get(k) ?? 0))).fill(k)).sort();
  if (added.length > 0) out.set(`${path}[+]`, JSON.stringify(added));
  if (removed.length > 0) out.set(`${path}[-]`, JSON.stringify(removed));
}

/** An Any kept as its `@type` alone (a type the capturing registry did not know). */
const opaque = (v: { [k: string]: JsonValue }): boolean => typeof v['@type'] === 'string' && Object.keys(v).length === 1;

export function jsonChanges(before: JsonValue | undefined, after: JsonValue | undefined, path = '', out: Changes = new Map()): Changes {
  if (canonical(before) === canonical(after)) return out;
  if (isObject(before) && isObject(after)) {
    // The same Any type seen once opaque and once in full (the JSON registry grew between captures): not a change.
    if (before['@type'] === after['@type'] && (opaque(before) || opaque(after))) return out;
    for (const k of new Set([...Object.keys(before), ...Object.keys(after)])) jsonChanges(before[k], after[k], `${path}.${k}`, out);
    return out;
  }
  if (Array.isArray(before) && Array.isArray(after)) {
    // Named elements (filters, chains, vhosts, routes) by name, their order apart; unnamed ones by
    // position when their count is unchanged, else as elements added and removed.
    const key = keyFor(path);
    const named = (l: readonly JsonValue[]): Map<string, JsonValue> =>
      new Map(l.flatMap((e) => (key(e) !== undefined ? [[key(e)!, e] as const] : [])));
    const bn = named(before);
    const an = named(after);
    for (const n of new Set([...bn.keys(), ...an.keys()])) jsonChanges(bn.get(n), an.get(n), `${path}[${n}]`, out);
    const order = (l: readonly JsonValue[]): string[] => l.map((e) => key(e) ?? '');
    if (order(before).join('\n') !== order(after).join('\n') && an.size > 0)
      out.set(`${path}#order`, JSON.stringify(order(after).filter((n) => n !== '')));
    const bu = before.filter((e) => key(e) === undefined);
    const au = after.filter((e) => key(e) === undefined);
    if (bu.length === au.length) au.forEach((e, i) => jsonChanges(bu[i], e, `${path}[${i}]`, out));
    else addedRemoved(bu, au, path, out);
    return out;
  }
  out.set(path, canonical(after));
  return out;
}

/** Differences between two change sets; `#order` entries compare on the names both lists have. */
export function compareChanges(istiod: Changes, meshpilot: Changes): string[] {
  const out: string[] = [];
  for (const k of [...new Set([...istiod.keys(), ...meshpilot.keys()])].sort()) {
    const i = istiod.get(k);
    const m = meshpilot.get(k);
    if (k.endsWith('#order') && i !== undefined && m !== undefined) {
      const il = JSON.parse(i) as string[];
      const ml = JSON.parse(m) as string[];
      const common = (x: string[], y: string[]): string[] => x.filter((n) => y.includes(n));
      if (common(il, ml).join('\n') !== common(ml, il).join('\n')) out.push(`${k}: istiod ${i} meshpilot ${m}`);
      continue;
    }
    if (k.endsWith('#order') && (i === undefined || m === undefined)) {
      // One side reordered/added among elements the other does not have: compare the common names' order to base.
      continue;
    }
    const short = (v: string | undefined): string => (v === undefined ? '(unchanged)' : v.length > 400 ? `${v.slice(0, 400)}…` : v);
    if (i !== m) out.push(`${k}: istiod ${short(i)} meshpilot ${short(m)}`);
  }
  return out;
}
