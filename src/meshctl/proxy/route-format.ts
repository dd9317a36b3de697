import type { HeaderMatcher, QueryParameterMatcher, Route, RouteMatch } from '../../gen/envoy/config/route/v3/route_components_pb.js';
import type { StringMatcher } from '../../gen/envoy/type/matcher/v3/string_pb.js';
import type { RouteConfiguration } from '../../gen/envoy/config/route/v3/route_pb.js';
import { PASSTHROUGH_CLUSTER } from '../../model/index.js';
import { describeManagement } from './istio-metadata.js';
import { describeMatch } from './listener-format.js';
import { tabwrite } from './tabwriter.js';

/** `--name` of proxy-config route; `verbose` (istioctl's default) prints one row per route. */
export interface RouteFilter {
  readonly name?: string;
  readonly verbose?: boolean;
}

function isPassthrough(r: Route): boolean {
  return (
    r.action.case === 'route' &&
    r.action.value.clusterSpecifier.case === 'cluster' &&
    r.action.value.clusterSpecifier.value === PASSTHROUGH_CLUSTER
  );
}

/** Drops `x.svc.cluster.local` / `x.svc` when the shorter `x` is also listed, keeping the order. */
function unexpandDomains(domains: readonly string[]): string[] {
  const unique = new Set(domains);
  const drop = new Set<string>();
  for (const h of domains) {
    for (const suffix of ['.svc.cluster.local', '.svc']) {
      const stripped = h.endsWith(suffix) ? h.slice(0, -suffix.length) : h;
      if (stripped !== h && unique.has(stripped)) drop.add(h);
    }
  }
  return domains.filter((h) => !drop.has(h));
}

/** istioctl's DOMAINS: the portless domains (IPv6 literals kept), shortened, at most two then `+ N more...`. */
export function describeRouteDomains(domains: readonly string[]): string {
  if (domains.length === 0) return '';
  if (domains.length === 1) return domains[0] ?? '';
  const withoutPort = unexpandDomains(domains.filter((d) => !d.includes(':') || (d.split(':').length - 1 > 2 && d.endsWith(']'))));
  if (withoutPort.length > 2) return `${withoutPort.slice(0, 2).join(', ')} + ${withoutPort.length - 2} more...`;
  return withoutPort.join(', ');
}

/** `=v`, `=v*`, `=*v`, `=*v*`, `~=re` after a header or query name. */
function describeStringMatch(m: StringMatcher | undefined): string {
  const p = m?.matchPattern;
  switch (p?.case) {
    case 'exact':
      return `=${p.value}`;
    case 'prefix':
      return `=${p.value}*`;
    case 'suffix':
      return `=*${p.value}`;
    case 'contains':
      return `=*${p.value}*`;
    case 'safeRegex':
      return `~=${p.value.regex}`;
    default:
      return '';
  }
}

function describeHeader(h: HeaderMatcher): string {
  const spec = h.headerMatchSpecifier;
  let cond: string;
  switch (spec.case) {
    case 'stringMatch':
      cond = describeStringMatch(spec.value);
      break;
    case 'exactMatch':
      cond = `=${spec.value}`;
      break;
    case 'prefixMatch':
      cond = `=${spec.value}*`;
      break;
    case 'suffixMatch':
      cond = `=*${spec.value}`;
      break;
    case 'containsMatch':
      cond = `=*${spec.value}*`;
      break;
    case 'safeRegexMatch':
      cond = `~=${spec.value.regex}`;
      break;
    case 'presentMatch':
      return `${spec.value === h.invertMatch ? '!' : ''}${h.name}`;
    default:
      cond = '';
  }
  return `${h.invertMatch ? '!' : ''}${h.name}${cond}`;
}

function describeQuery(q: QueryParameterMatcher): string {
  const spec = q.queryParameterMatchSpecifier;
  return `?${q.name}${spec.case === 'stringMatch' ? describeStringMatch(spec.value) : ''}`;
}

/**
 * The route table's MATCH: istioctl's path condition, then the header and query conditions it
 * leaves out (`/* [end-user=jason]`), so that routes differing only by headers do not print as
 * identical rows.
 */
export function describeRouteMatch(m: RouteMatch | undefined): string {
  const path = describeMatch(m);
  const conds = [...(m?.headers ?? []).map(describeHeader), ...(m?.queryParameters ?? []).map(describeQuery)];
  return conds.length === 0 ? path : `${path} [${conds.join(', ')}]`;
}

/** Numeric names (port routes) in numeric order first-come; others keep their place relative to each other. */
export function sortRoutes(routes: readonly RouteConfiguration[]): RouteConfiguration[] {
  const num = (r: RouteConfiguration): number | undefined => (/^[+-]?\d+$/.test(r.name) ? Number(r.name) : undefined);
  return [...routes].sort((a, b) => {
    const x = num(a);
    const y = num(b);
    if (x !== undefined && y !== undefined) return x - y;
    // Go's comparator says "not less" for any non-numeric name; ordering those by name keeps output deterministic.
    if (x === undefined && y === undefined) return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
    return x === undefined ? 1 : -1;
  });
}

/**
 * `istioctl proxy-config route`: NAME, VHOST NAME, DOMAINS, MATCH, VIRTUAL SERVICE (passthrough
 * routes hidden; a vhost without routes reads `/*` → `404`), or NAME, VIRTUAL HOSTS when not verbose.
 * MATCH adds header and query conditions to istioctl's (see describeRouteMatch).
 */
export function formatRoutes(routes: readonly RouteConfiguration[], filter: RouteFilter = {}, withName = false): string {
  const verbose = filter.verbose ?? true;
  const rows: string[][] = [verbose ? ['NAME', 'VHOST NAME', 'DOMAINS', 'MATCH', 'VIRTUAL SERVICE'] : ['NAME', 'VIRTUAL HOSTS']];
  for (const rc of sortRoutes(routes)) {
    if (filter.name && filter.name !== rc.name) continue;
    const name = withName ? `route/${rc.name}` : rc.name;
    if (!verbose) {
      rows.push([name, String(rc.virtualHosts.length)]);
      continue;
    }
    for (const vh of rc.virtualHosts) {
      const domains = describeRouteDomains(vh.domains);
      for (const r of vh.routes) {
        if (!isPassthrough(r)) rows.push([name, vh.name, domains, describeRouteMatch(r.match), describeManagement(r.metadata)]);
      }
      if (vh.routes.length === 0) rows.push([name, vh.name, domains, '/*', '404']);
    }
  }
  return tabwrite(rows, 5);
}
