import { create } from '@bufbuild/protobuf';
import { anyUnpack, type Any } from '@bufbuild/protobuf/wkt';
import {
  FilterSchema,
  type Filter,
  type FilterChain,
  type FilterChainMatch,
} from '../../gen/envoy/config/listener/v3/listener_components_pb.js';
import type { Listener } from '../../gen/envoy/config/listener/v3/listener_pb.js';
import type { RouteConfiguration } from '../../gen/envoy/config/route/v3/route_pb.js';
import type { RouteMatch, VirtualHost } from '../../gen/envoy/config/route/v3/route_components_pb.js';
import { HttpConnectionManagerSchema } from '../../gen/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager_pb.js';
import { TcpProxySchema } from '../../gen/envoy/extensions/filters/network/tcp_proxy/v3/tcp_proxy_pb.js';
import { BLACKHOLE_CLUSTER } from '../../model/index.js';
import { tabwrite } from './tabwriter.js';

const HCM = 'envoy.filters.network.http_connection_manager';
const TCP_PROXY = 'envoy.filters.network.tcp_proxy';

/** `--address --port --type` of proxy-config listener; `verbose` (istioctl's default) adds MATCH and DESTINATION. */
export interface ListenerFilter {
  readonly address?: string;
  readonly port?: number;
  readonly type?: string;
  readonly verbose?: boolean;
}

function chains(l: Listener): FilterChain[] {
  return l.defaultFilterChain ? [...l.filterChains, l.defaultFilterChain] : [...l.filterChains];
}

/** istioctl checks the TcpProxy's encoded bytes for the blackhole cluster name. */
function isBlackhole(a: Any | undefined): boolean {
  return a !== undefined && new TextDecoder('latin1').decode(a.value).includes(BLACKHOLE_CLUSTER);
}

function typedConfig(f: Filter): Any | undefined {
  return f.configType.case === 'typedConfig' ? f.configType.value : undefined;
}

/** HTTP, TCP, HTTP+TCP or UNKNOWN by the network filters of all chains (blackhole TCP proxies do not count). */
export function listenerType(l: Listener): string {
  if (apiListenerTarget(l)) return 'HTTP';
  let http = 0;
  let tcp = 0;
  for (const fc of chains(l)) {
    for (const f of fc.filters) {
      if (f.name === HCM) http++;
      else if (f.name === TCP_PROXY && !isBlackhole(typedConfig(f))) tcp++;
    }
  }
  if (http > 0) return tcp === 0 ? 'HTTP' : 'HTTP+TCP';
  return tcp > 0 ? 'TCP' : 'UNKNOWN';
}

/**
 * A proxyless gRPC client's listener: no socket, an API listener (the HCM its channel uses) named
 * `<host>:<port>` after the target it resolves. Shown by that host and port.
 */
function apiListenerTarget(l: Listener): { host: string; port: number } | undefined {
  if (!l.apiListener?.apiListener || l.address?.address.case !== undefined) return undefined;
  const m = /^(.*):(\d+)$/.exec(l.name);
  return m ? { host: m[1] ?? '', port: Number(m[2]) } : { host: l.name, port: 0 };
}

function address(l: Listener): string {
  const a = l.address?.address;
  if (a?.case === 'socketAddress') return a.value.address;
  if (a?.case === 'pipe') return a.value.path;
  return apiListenerTarget(l)?.host ?? '';
}

function additionalAddresses(l: Listener): string[] {
  return l.additionalAddresses.map((x) => (x.address?.address.case === 'socketAddress' ? x.address.address.value.address : ''));
}

function port(l: Listener): number {
  const a = l.address?.address;
  if (a?.case === 'socketAddress') return a.value.portSpecifier.case === 'portValue' ? a.value.portSpecifier.value : 0;
  return apiListenerTarget(l)?.port ?? 0;
}

/** The API listener's HCM as a filter, so the chain describers read it as any other. */
function apiListenerFilters(l: Listener): Filter[] {
  const hcm = l.apiListener?.apiListener;
  return hcm ? [create(FilterSchema, { name: HCM, configType: { case: 'typedConfig', value: hcm } })] : [];
}

export function listenerMatches(f: ListenerFilter, l: Listener): boolean {
  if (f.address && ![...additionalAddresses(l), address(l)].some((a) => a.toLowerCase() === f.address?.toLowerCase())) return false;
  if (f.port && port(l) !== f.port) return false;
  if (f.type && listenerType(l).toLowerCase() !== f.type.toLowerCase()) return false;
  return true;
}

const PROTOCOL_DESCRIPTIONS: readonly (readonly [string, readonly string[]])[] = [
  ['App: HTTP TLS', ['http/1.0', 'http/1.1', 'h2c', 'istio-http/1.0', 'istio-http/1.1', 'istio-h2']],
  ['App: Istio HTTP Plain', ['istio', 'istio-http/1.0', 'istio-http/1.1', 'istio-h2']],
  ['App: TCP TLS', ['istio-peer-exchange', 'istio']],
  ['App: HTTP', ['http/1.0', 'http/1.1', 'h2c']],
];

/** istioctl's MATCH column: SNI, transport, ALPN (named when it is one of Istio's sets), destination address/port. */
export function describeFilterChainMatch(m: FilterChainMatch | undefined): string {
  const d: string[] = [];
  if (m && m.serverNames.length > 0) d.push(`SNI: ${m.serverNames.join(',')}`);
  if (m && m.transportProtocol !== '') d.push(`Trans: ${m.transportProtocol}`);
  if (m && m.applicationProtocols.length > 0) {
    const alpn = m.applicationProtocols;
    const named = PROTOCOL_DESCRIPTIONS.find(([, p]) => p.length === alpn.length && p.every((x, i) => x === alpn[i]));
    d.push(named ? named[0] : `App: ${alpn.join(',')}`);
  }
  const p = m?.destinationPort !== undefined ? `:${m.destinationPort}` : '';
  if (m && m.prefixRanges.length > 0) d.push(`Addr: ${m.prefixRanges.map((r) => `${r.addressPrefix}/${r.prefixLen ?? 0}`).join(',')}${p}`);
  else if (p !== '') d.push(`Addr: *${p}`);
  return d.length === 0 ? 'ALL' : d.join('; ');
}

/** istioctl's DESTINATION column: the HCM's route (inline or RDS name) or the TcpProxy cluster. */
export function describeFilters(filters: readonly Filter[]): string {
  for (const f of filters) {
    const tc = typedConfig(f);
    if (f.name === HCM) {
      const hcm = tc ? anyUnpack(tc, HttpConnectionManagerSchema) : undefined;
      if (hcm?.routeSpecifier.case === 'routeConfig') return describeRouteConfig(hcm.routeSpecifier.value);
      if (hcm?.routeSpecifier.case === 'rds' && hcm.routeSpecifier.value.routeConfigName !== '')
        return `Route: ${hcm.routeSpecifier.value.routeConfigName}`;
      return 'HTTP';
    }
    if (f.name === TCP_PROXY && !isBlackhole(tc)) {
      const tcp = tc ? anyUnpack(tc, TcpProxySchema) : undefined;
      const cluster = tcp?.clusterSpecifier.case === 'cluster' ? tcp.clusterSpecifier.value : '';
      return cluster.includes('Cluster') ? cluster : `Cluster: ${cluster}`;
    }
  }
  return 'Non-HTTP/Non-TCP';
}

function describeRouteConfig(rc: RouteConfiguration): string {
  const all = matchAllCluster(rc);
  if (all !== '') return all;
  const vhosts = rc.virtualHosts.map((vh) => {
    const domains = describeDomains(vh);
    const routes = vh.routes.map((r) => describeMatch(r.match)).join(', ');
    return domains === '' ? routes : `${domains} ${routes}`;
  });
  return `Inline Route: ${vhosts.join('; ')}`;
}

/** A single `*` vhost with one `/` prefix route to a cluster reads as that cluster. */
function matchAllCluster(rc: RouteConfiguration): string {
  const [vh] = rc.virtualHosts;
  if (rc.virtualHosts.length !== 1 || !vh || vh.domains.length !== 1 || vh.domains[0] !== '*' || vh.routes.length !== 1) return '';
  const r = vh.routes[0];
  if (r?.match?.pathSpecifier.case !== 'prefix' || r.match.pathSpecifier.value !== '/') return '';
  if (r.action.case !== 'route' || r.action.value.clusterSpecifier.case !== 'cluster') return '';
  const cluster = r.action.value.clusterSpecifier.value;
  return cluster.includes('Cluster') ? cluster : `Cluster: ${cluster}`;
}

function describeDomains(vh: VirtualHost): string {
  return vh.domains.length === 1 && vh.domains[0] === '*' ? '' : vh.domains.join('/');
}

/** istioctl's route MATCH: `<prefix>*`, `PathPrefix:<p>`, the exact path or `regex <re>`; headers are ignored. */
export function describeMatch(m: RouteMatch | undefined): string {
  const p = m?.pathSpecifier;
  const conds: string[] = [];
  if (p?.case === 'prefix' && p.value !== '') conds.push(`${p.value}*`);
  if (p?.case === 'pathSeparatedPrefix' && p.value !== '') conds.push(`PathPrefix:${p.value}`);
  if (p?.case === 'path' && p.value !== '') conds.push(p.value);
  if (p?.case === 'safeRegex') conds.push(`regex ${p.value.regex}`);
  return conds.join(' ');
}

/** Listeners by port, address, type (stable), as istioctl sorts them. */
export function sortListeners(ls: readonly Listener[]): Listener[] {
  return [...ls].sort((a, b) => port(a) - port(b) || cmpStr(address(a), address(b)) || cmpStr(listenerType(a), listenerType(b)));
}

function cmpStr(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * `istioctl proxy-config listener`: ADDRESSES, PORT, then MATCH and DESTINATION (one row per
 * filter chain, by destination descending) when verbose, else TYPE. Go's tabwriter padding 1.
 */
export function formatListeners(listeners: readonly Listener[], filter: ListenerFilter = {}, withName = false): string {
  const verbose = filter.verbose ?? true;
  const header = ['ADDRESSES', 'PORT', ...(verbose ? ['MATCH', 'DESTINATION'] : ['TYPE'])];
  const rows: string[][] = [withName ? ['NAME', ...header] : header];
  for (const l of sortListeners(listeners.filter((x) => listenerMatches(filter, x)))) {
    const lead = [...(withName ? [`listener/${l.name}`] : []), [address(l), ...additionalAddresses(l)].join(','), String(port(l))];
    if (!verbose) {
      rows.push([...lead, listenerType(l)]);
      continue;
    }
    const matches = apiListenerTarget(l)
      ? [{ match: 'ALL', destination: describeFilters(apiListenerFilters(l)) }]
      : chains(l).map((fc) => ({ match: describeFilterChainMatch(fc.filterChainMatch), destination: describeFilters(fc.filters) }));
    // Go's sort.Slice is not stable; a stable sort keeps equal destinations in chain order.
    matches.sort((a, b) => cmpStr(b.destination, a.destination));
    for (const m of matches) rows.push([...lead, m.match, m.destination]);
  }
  return tabwrite(rows, 1);
}
