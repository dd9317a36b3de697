/** Reading Kubernetes JSON (a Gateway, a ConfigMap) without trusting its shape. */

/** The value as an object, or an empty one. */
export function rec(v: unknown): Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

/** The value as a string, or ''. */
export function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

/** The string members of an object (labels, annotations, ConfigMap data). */
export function strings(v: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, e] of Object.entries(rec(v))) if (typeof e === 'string') out[k] = e;
  return out;
}
