/**
 * Host names as Istio treats them: short names resolve against the config's namespace, `*` and
 * `*.suffix` are wildcards, matching is case-insensitive DNS-style.
 */

/** istiod's ResolveShortnameToFQDN: a name without dots gets `<ns>.svc.<domain>` appended. */
export function resolveShortName(host: string, namespace: string, domain: string): string {
  if (host === '*' || host.startsWith('*') || host.includes('.')) return host.toLowerCase();
  return `${host}.${namespace}.svc.${domain}`.toLowerCase();
}

export function isWildcard(host: string): boolean {
  return host.startsWith('*');
}

/** Whether `pattern` (exact or `*`/`*.suffix` wildcard) matches the concrete host `host`. */
export function hostMatches(pattern: string, host: string): boolean {
  if (pattern === '*') return true;
  if (pattern.startsWith('*')) return host.endsWith(pattern.slice(1));
  return pattern === host;
}

/** Whether two host patterns can match a common host (either is a wildcard covering the other). */
export function hostsOverlap(a: string, b: string): boolean {
  return hostMatches(a, b) || hostMatches(b, a);
}

/** Whether an object exported to `exportTo` (resolved: `*` or namespace names) is visible in `namespace`. */
export function isVisible(exportTo: readonly string[], ownerNamespace: string, namespace: string): boolean {
  if (exportTo.length === 0) return true;
  for (const e of exportTo) {
    if (e === '*' || e === namespace || (e === '.' && ownerNamespace === namespace)) return true;
  }
  return false;
}
