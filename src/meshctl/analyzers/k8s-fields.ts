/** Reading fields of a Kubernetes object's body (as read from YAML or the API): typed, never throwing. */

export const isRecord = (v: unknown): v is Readonly<Record<string, unknown>> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The value at a path of keys, or undefined when any step is missing or not a mapping. */
export function fieldAt(v: unknown, ...path: readonly string[]): unknown {
  let cur = v;
  for (const k of path) {
    if (!isRecord(cur)) return undefined;
    cur = cur[k];
  }
  return cur;
}

export const recordAt = (v: unknown, ...path: readonly string[]): Readonly<Record<string, unknown>> | undefined => {
  const x = fieldAt(v, ...path);
  return isRecord(x) ? x : undefined;
};

/** The mappings of a list at a path (non-mapping items skipped). */
export const recordsAt = (v: unknown, ...path: readonly string[]): Readonly<Record<string, unknown>>[] => {
  const x = fieldAt(v, ...path);
  return Array.isArray(x) ? x.filter(isRecord) : [];
};

export const stringAt = (v: unknown, ...path: readonly string[]): string | undefined => {
  const x = fieldAt(v, ...path);
  return typeof x === 'string' ? x : undefined;
};

/** A map of strings at a path (labels, matchLabels); non-string values are skipped. */
export function stringMapAt(v: unknown, ...path: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  const x = recordAt(v, ...path);
  if (x) for (const [k, val] of Object.entries(x)) if (typeof val === 'string') out[k] = val;
  return out;
}

/** The pod spec of a Pod, or of a workload's pod template (Deployment, StatefulSet, …). */
export const podSpecOf = (body: unknown, kind: string): Readonly<Record<string, unknown>> | undefined =>
  kind === 'Pod' ? recordAt(body, 'spec') : recordAt(body, 'spec', 'template', 'spec');
