/**
 * istioctl's virtualservice.MatchesAnalyzer over http, tcp and tls routes: a second rule without
 * matches is never used (IST0130, "only the last rule can have no matches"), nor is a rule whose
 * every match an earlier rule already has (IST0130); each such duplicated match is IST0131.
 * Matches compare by their JSON without `name`; http rules and matches print as their quoted
 * `name` or `#<index>`, tcp/tls ones as `#<index>`. A match after a rule without matches is
 * unreachable too. For http, as Istio's validation, an earlier uri-prefix match that covers a later
 * one (its prefix a prefix of the later's, same port, method/authority/header/query conditions equal
 * or prefixes of the later's; no method means GET) makes the later one IST0131.
 */
import type { HTTPMatchRequest, HTTPRoute, StringMatch } from '../../gen/networking/v1alpha3/virtual_service_pb.js';
import type { Analyzer, Report, ResourceRef } from '../analyze/model.js';
import { MSG } from '../analyze/messages.js';
import { configsOf, refOf } from '../analyze/model.js';

interface Rule {
  readonly name?: string;
  readonly match: readonly object[];
}

const label = (name: string | undefined, i: number): string => (name ? JSON.stringify(name) : `#${i}`);

/** A match's identity: its content without its name (protobuf-es messages are plain data). */
const matchKey = (m: object): string => JSON.stringify({ ...m, name: '' });

function analyzeRules(rules: readonly Rule[], resource: ResourceRef, report: Report): void {
  const seen = new Map<string, number>();
  let emptySeen = false;
  rules.forEach((rule, i) => {
    const ruleName = label(rule.name, i);
    if (rule.match.length === 0) {
      if (emptySeen)
        report({ type: MSG.VirtualServiceUnreachableRule, resource, args: [ruleName, 'only the last rule can have no matches'] });
      emptySeen = true;
      return;
    }
    let dups = 0;
    rule.match.forEach((m, j) => {
      if (emptySeen) {
        report({ type: MSG.VirtualServiceUnreachableRule, resource, args: [ruleName, 'route without matches defined before'] });
        return;
      }
      const key = matchKey(m);
      const prior = seen.get(key);
      if (prior !== undefined) {
        dups++;
        const matchName = 'name' in m && typeof m.name === 'string' ? m.name : undefined;
        report({
          type: MSG.VirtualServiceIneffectiveMatch,
          resource,
          args: [ruleName, label(matchName, j), label(rules[prior]?.name, prior)],
        });
      } else seen.set(key, i);
    });
    if (dups === rule.match.length)
      report({ type: MSG.VirtualServiceUnreachableRule, resource, args: [ruleName, 'all matches used by prior rules'] });
  });
}

/** A uri-prefix match reduced to what Istio compares: `exact:v` / `prefix:v` strings. */
interface PrefixMatch {
  readonly route: string;
  readonly match: string;
  readonly prefix: string;
  readonly port: number;
  readonly method: string;
  readonly authority: string;
  readonly headers: ReadonlyMap<string, string>;
  readonly queryParams: ReadonlyMap<string, string>;
  readonly withoutHeaders: ReadonlyMap<string, string>;
}

const exactOrPrefix = (m: StringMatch | undefined): string =>
  m?.matchType.case === 'exact' && m.matchType.value !== ''
    ? `exact:${m.matchType.value}`
    : m?.matchType.case === 'prefix' && m.matchType.value !== ''
      ? `prefix:${m.matchType.value}`
      : '';

const conditionMap = (m: { [k: string]: StringMatch }): Map<string, string> =>
  new Map(Object.entries(m).map(([k, v]) => [k, exactOrPrefix(v)]));

function prefixMatch(route: HTTPRoute, i: number, m: HTTPMatchRequest, j: number): PrefixMatch | undefined {
  const prefix = m.uri?.matchType.case === 'prefix' ? m.uri.matchType.value : '';
  if (prefix === '') return undefined;
  return {
    route: label(route.name, i),
    match: label(m.name, j),
    prefix,
    port: m.port,
    method: exactOrPrefix(m.method) || 'exact:GET',
    authority: exactOrPrefix(m.authority),
    headers: conditionMap(m.headers),
    queryParams: conditionMap(m.queryParams),
    withoutHeaders: conditionMap(m.withoutHeaders),
  };
}

/** Istio's coveredValidation: every condition of `a` equal to, or a string prefix of, `b`'s. */
function covers(a: PrefixMatch, b: PrefixMatch): boolean {
  if (!b.prefix.startsWith(a.prefix) || a.port !== b.port) return false;
  if (a.method !== b.method && !a.method.startsWith(b.method)) return false;
  if (a.authority !== b.authority && !a.authority.startsWith(b.authority)) return false;
  const sameMaps = (x: ReadonlyMap<string, string>, y: ReadonlyMap<string, string>): boolean =>
    x.size === y.size && [...x].every(([k, v]) => y.has(k) && (v === y.get(k) || v.startsWith(y.get(k) ?? '')));
  return sameMaps(a.headers, b.headers) && sameMaps(a.queryParams, b.queryParams) && sameMaps(a.withoutHeaders, b.withoutHeaders);
}

function analyzeOverlappingPrefixes(routes: readonly HTTPRoute[], resource: ResourceRef, report: Report): void {
  const seen = new Set<string>();
  const prefixes: PrefixMatch[] = [];
  let emptySeen = false;
  routes.forEach((route, i) => {
    if (route.match.length === 0) {
      emptySeen = true;
      return;
    }
    route.match.forEach((m, j) => {
      const key = matchKey(m);
      // Duplicates and matches after a catch-all rule are reported above, and not compared here.
      if (emptySeen || seen.has(key)) return;
      seen.add(key);
      const p = prefixMatch(route, i, m, j);
      if (p) prefixes.push(p);
    });
  });
  prefixes.forEach((a, i) => {
    for (const b of prefixes.slice(i + 1)) {
      if (b.prefix === a.prefix || !covers(a, b)) continue;
      report({
        type: MSG.VirtualServiceIneffectiveMatch,
        resource,
        args: [b.route, `${b.match} of prefix ${b.prefix}`, `${a.match} of prefix ${a.prefix} on ${a.route}`],
      });
    }
  });
}

export const unreachableRoutesAnalyzer: Analyzer = {
  name: 'virtualservice.MatchesAnalyzer',
  description: 'Checks virtual services for unreachable and duplicate matches',
  messages: [MSG.VirtualServiceUnreachableRule, MSG.VirtualServiceIneffectiveMatch],
  analyze(s, report) {
    for (const vs of configsOf(s, 'VirtualService')) {
      const resource = refOf(vs);
      analyzeRules(vs.spec.http, resource, report);
      analyzeOverlappingPrefixes(vs.spec.http, resource, report);
      analyzeRules(vs.spec.tcp, resource, report);
      analyzeRules(vs.spec.tls, resource, report);
    }
  },
};
