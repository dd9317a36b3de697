/**
 * Counts live objects by constructor name in a V8 heap snapshot of this process (node:v8
 * writeHeapSnapshot), so a before/after pair shows which connection objects a workload left
 * behind. The snapshot is taken after a GC (V8 collects before writing one).
 */
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeHeapSnapshot } from 'node:v8';

const PARSER = fileURLToPath(new URL('./census-parse.mjs', import.meta.url));

/**
 * Live objects per constructor name, for the names asked. The snapshot is parsed in a child
 * process: a parse here would grow this process's RSS by several times the heap.
 */
export function heapCensus(names: readonly string[]): Record<string, number> {
  const file = writeHeapSnapshot(join(tmpdir(), `meshpilot-census-${process.pid}-${Date.now()}.heapsnapshot`));
  try {
    return JSON.parse(execFileSync(process.execPath, [PARSER, file, ...names], { encoding: 'utf8', maxBuffer: 1 << 20 })) as Record<
      string,
      number
    >;
  } finally {
    rmSync(file, { force: true });
  }
}

/** `name before→after` for every name whose count changed, or 'no change'. */
export function censusDiff(before: Readonly<Record<string, number>>, after: Readonly<Record<string, number>>): string {
  const parts = Object.keys(after).map((k) => `${k} ${before[k] ?? 0}→${after[k] ?? 0}`);
  return parts.join(', ');
}
