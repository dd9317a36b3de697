/** Shared by the gateway analyzers: a selector's printed form (k8s labels.Set.String(): sorted `k=v`, comma-joined). */
export const selectorString = (sel: Readonly<Record<string, string>>): string =>
  Object.keys(sel)
    .sort()
    .map((k) => `${k}=${sel[k] ?? ''}`)
    .join(',');

/** Whether every label of `sub` is in `sup` with the same value (istioctl's selectorSubset). */
export function selectorSubset(sub: Readonly<Record<string, string>>, sup: Readonly<Record<string, string>>): boolean {
  return Object.entries(sub).every(([k, v]) => sup[k] === v);
}
