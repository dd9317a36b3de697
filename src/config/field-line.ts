/**
 * The line of a field inside a parsed YAML (or JSON) document, from a validation path such as
 * `spec.trafficPolicy.connectionPool`, `spec.http[0].match[1].uri.regex` or `metadata.labels[app]`
 * (src/config/validation/issues.ts builds them), so an error names the field's line and not the
 * object's first one.
 */
import { isMap, isScalar, isSeq, type Node } from 'yaml';

interface Step {
  readonly name: string;
  /** Written as `[name]`: a list index, or a map key that may hold dots. */
  readonly bracket: boolean;
}

/** `a.b[0].c[x.y]` → a, b, [0], c, [x.y]. */
export function pathSteps(path: string): Step[] {
  const out: Step[] = [];
  let i = 0;
  while (i < path.length) {
    if (path[i] === '.') {
      i++;
      continue;
    }
    if (path[i] === '[') {
      const end = path.indexOf(']', i + 1);
      if (end < 0) {
        out.push({ name: path.slice(i + 1), bracket: true });
        break;
      }
      out.push({ name: path.slice(i + 1, end), bracket: true });
      i = end + 1;
      continue;
    }
    let end = i;
    while (end < path.length && path[end] !== '.' && path[end] !== '[') end++;
    out.push({ name: path.slice(i, end), bracket: false });
    i = end;
  }
  return out;
}

const startOf = (n: unknown): number | undefined => (n as Node | null | undefined)?.range?.[0];

/**
 * The 1-based line of `path` under `root`: a map entry's key line, a list item's line. When the
 * path goes on past what the document has (a required field that is missing), the line of the
 * deepest part that is there; undefined when not even the first step is.
 */
export function lineOfPath(root: unknown, path: string, lineAt: (offset: number) => number): number | undefined {
  const steps = pathSteps(path);
  let node: unknown = root;
  let offset: number | undefined;
  let i = 0;
  while (i < steps.length) {
    const step = steps[i]!;
    if (isSeq(node) && step.bracket && /^\d+$/.test(step.name)) {
      const item: unknown = node.items[Number(step.name)];
      if (item === undefined) break;
      offset = startOf(item) ?? offset;
      node = item;
      i++;
      continue;
    }
    if (!isMap(node)) break;
    // A key may hold dots (annotation names): the shortest run of dotted steps that is a key wins.
    let next = -1;
    for (let j = i + 1; j <= steps.length; j++) {
      if (j > i + 1 && (step.bracket || steps[j - 1]!.bracket)) break;
      const name = steps
        .slice(i, j)
        .map((s) => s.name)
        .join('.');
      const pair = node.items.find((p) => isScalar(p.key) && String(p.key.value) === name);
      if (pair) {
        offset = startOf(pair.key) ?? offset;
        node = pair.value;
        next = j;
        break;
      }
    }
    if (next < 0) break;
    i = next;
  }
  return offset === undefined ? undefined : lineAt(offset);
}
