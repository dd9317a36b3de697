/**
 * The mesh trust domain and its aliases (istiod's trustdomain.Bundle): a policy naming
 * `cluster.local/ns/foo/sa/bar` or an alias matches that identity under every trust domain of the
 * bundle, so renaming the trust domain does not break existing policies.
 */
import { DEFAULT_TRUST_DOMAIN } from '../../config/constants.js';
export class TrustDomainBundle {
  /** The mesh trust domain first, then its aliases. */
  readonly trustDomains: readonly string[];

  constructor(trustDomain: string, aliases: readonly string[] = []) {
    this.trustDomains = [trustDomain, ...aliases];
  }

  /**
   * Principals (`<td>/ns/<ns>/sa/<sa>`) with the trust domain replaced by each trust domain of the
   * bundle, when the principal's trust domain is `cluster.local` (meaning "the local one") or one of
   * the bundle's. A `*` trust domain, a principal not in SPIFFE form, or a foreign trust domain is
   * kept as written.
   */
  replaceTrustDomainAliases(principals: readonly string[]): string[] {
    const out: string[] = [];
    for (const principal of principals) {
      const parts = principal.split('/');
      if (parts.length !== 5 || parts[0] === '*') {
        out.push(principal);
        continue;
      }
      const td = parts[0] ?? '';
      if (td === DEFAULT_TRUST_DOMAIN || this.trustDomains.some((t) => looseMatch(td, t))) {
        out.push(...this.replaceTrustDomains(principal, td));
      } else {
        out.push(principal);
      }
    }
    return out;
  }

  /** Trust domain values with a bundle member expanded to the whole bundle (duplicates dropped). */
  expandTrustDomainAliases(values: readonly string[]): string[] {
    const out: string[] = [];
    for (const v of values) {
      for (const x of this.trustDomains.includes(v) ? this.trustDomains : [v]) if (!out.includes(x)) out.push(x);
    }
    return out;
  }

  private replaceTrustDomains(principal: string, principalTd: string): string[] {
    const out: string[] = [];
    for (const td of this.trustDomains) {
      // A principal whose trust domain is `*suffix` and covers this one is kept as written.
      const next = suffixMatch(td, principalTd) ? principal : [td, ...principal.split('/').slice(1)].join('/');
      if (!out.includes(next)) out.push(next);
    }
    return out;
  }
}

function prefixMatch(a: string, pattern: string): boolean {
  return pattern.endsWith('*') && a.startsWith(pattern.slice(0, -1));
}

function suffixMatch(a: string, pattern: string): boolean {
  return pattern.startsWith('*') && a.endsWith(pattern.slice(1));
}

/** istiod's trustdomain stringMatch: exact, `*`, or a prefix/suffix wildcard on either side. */
function looseMatch(a: string, s: string): boolean {
  return a === s || s === '*' || prefixMatch(a, s) || prefixMatch(s, a) || suffixMatch(a, s) || suffixMatch(s, a);
}
