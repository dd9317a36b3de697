/**
 * Line numbers of fields inside each document, so messages point where istioctl's do (its
 * util.ErrorLine: `metadata.name`, `spec.ports[1]`, `spec.http[0].route[0].destination.host`).
 * Keyed by file and the document's start line, the same origin the config parser records. A file is
 * indexed from the config parser's syntax trees on the first lookup in it: most files get no message.
 */
import { isMap, isNode, isScalar, isSeq, type Node } from 'yaml';
import { isJsonFile, type ParsedTrees } from '../../config/index.js';
import type { ResourceRef } from './model.js';

type Lines = Map<string, number>;

export class FieldLines {
  readonly #docs = new Map<string, Lines>();
  /** Files added but not indexed yet. */
  readonly #pending = new Map<string, () => ParsedTrees>();

  /** Adds a file's parsed documents (YAML; JSON is YAML too, so the same walk applies). */
  add(file: string, trees: () => ParsedTrees): void {
    this.#pending.set(file, trees);
  }

  #indexFile(file: string): void {
    const trees = this.#pending.get(file);
    if (!trees) return;
    this.#pending.delete(file);
    const { roots, lineAt } = trees();
    for (const root of roots) {
      if (!isNode(root) || !root.range) continue;
      const start = lineAt(root.range[0]);
      const items = isMap(root) ? root.get('items', true) : undefined;
      const kind = isMap(root) ? root.get('kind', true) : undefined;
      if (isSeq(items) && isScalar(kind) && (kind.value as unknown) === 'List') {
        for (const item of items.items) if (isMap(item) && item.range) this.#index(file, item as Node, lineAt);
        continue;
      }
      this.#index(file, root as Node, lineAt, isJsonFile(file) ? 1 : start);
    }
  }

  #index(file: string, node: Node, lineAt: (o: number) => number, start?: number): void {
    const lines: Lines = new Map();
    walk(node, '', lines, lineAt);
    this.#docs.set(`${file}:${start ?? lineAt(node.range?.[0] ?? 0)}`, lines);
  }

  /** The line of `path` (e.g. `spec.ports[0]`) in the resource's document, if it is there. */
  lineOf(ref: ResourceRef, path: string): number | undefined {
    const o = ref.origin;
    if (!o || o.line === undefined) return undefined;
    this.#indexFile(o.file);
    return this.#docs.get(`${o.file}:${o.line}`)?.get(path);
  }
}

function walk(node: unknown, path: string, out: Lines, lineAt: (o: number) => number): void {
  if (isMap(node)) {
    for (const pair of node.items) {
      const key = isScalar(pair.key) ? String(pair.key.value) : undefined;
      if (key === undefined) continue;
      const p = path === '' ? key : `${path}.${key}`;
      const range = (pair.key as Node).range;
      if (range) out.set(p, lineAt(range[0]));
      walk(pair.value, p, out, lineAt);
    }
  } else if (isSeq(node)) {
    node.items.forEach((item, i) => {
      const p = `${path}[${i}]`;
      const range = (item as Node | null)?.range;
      if (range) out.set(p, lineAt(range[0]));
      walk(item, p, out, lineAt);
    });
  }
}
