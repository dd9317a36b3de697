/**
 * Counts live objects by constructor name in a V8 heap snapshot of this process (node:v8
 * writeHeapSnapshot), so a before/after pair shows which connection objects a workload left
 * behind. The snapshot is taken after a GC (V8 collects before writing one).
 */
import { readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeHeapSnapshot } from 'node:v8';

interface SnapshotJson {
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] } };
  nodes: number[];
  strings: string[];
}

/** Live objects per constructor name, for the names asked (others are not counted). */
export function heapCensus(names: readonly string[]): Record<string, number> {
  const file = writeHeapSnapshot(join(tmpdir(), `meshpilot-census-${process.pid}-${Date.now()}.heapsnapshot`));
  try {
    const snap = JSON.parse(readFileSync(file, 'utf8')) as SnapshotJson;
    const fields = snap.snapshot.meta.node_fields;
    const width = fields.length;
    const typeAt = fields.indexOf('type');
    const nameAt = fields.indexOf('name');
    const objectType = snap.snapshot.meta.node_types[0].indexOf('object');
    const wanted = new Map<number, string>();
    snap.strings.forEach((s, i) => {
      if (names.includes(s)) wanted.set(i, s);
    });
    const out: Record<string, number> = Object.fromEntries(names.map((n) => [n, 0]));
    for (let i = 0; i < snap.nodes.length; i += width) {
      if (snap.nodes[i + typeAt] !== objectType) continue;
      const name = wanted.get(snap.nodes[i + nameAt] ?? -1);
      if (name !== undefined) out[name] = (out[name] ?? 0) + 1;
    }
    return out;
  } finally {
    rmSync(file, { force: true });
  }
}

/** `name before→after` for every name whose count changed, or 'no change'. */
export function censusDiff(before: Readonly<Record<string, number>>, after: Readonly<Record<string, number>>): string {
  const parts = Object.keys(after).map((k) => `${k} ${before[k] ?? 0}→${after[k] ?? 0}`);
  return parts.join(', ');
}
