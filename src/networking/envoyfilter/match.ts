import type { Cluster } from '../../gen/envoy/config/cluster/v3/cluster_pb.js';
import type { Filter, FilterChain, ListenerFilter } from '../../gen/envoy/config/listener/v3/listener_components_pb.js';
import type { Listener } from '../../gen/envoy/config/listener/v3/listener_pb.js';
import type { Route, VirtualHost } from '../../gen/envoy/config/route/v3/route_components_pb.js';
import type { RouteConfiguration } from '../../gen/envoy/config/route/v3/route_pb.js';
import type { HttpFilter } from '../../gen/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager_pb.js';
import { EnvoyFilter_RouteConfigurationMatch_RouteMatch_Action as RouteAction } from '../../gen/networking/v1alpha3/envoy_filter_pb.js';
import { ApplyTo, Op, PatchContext, type CompiledPatch } from '../../model/index.js';

/** istiod's model.VirtualInboundListenerName / VirtualOutboundListenerName. */
const VIRTUAL_LISTENERS = new Set(['virtualInbound', 'virtualOutbound']);

export const contextMatches = (ctx: PatchContext, p: CompiledPatch): boolean => p.context === ctx || p.context === PatchContext.ANY;

export const isMerge = (op: Op): boolean => op === Op.MERGE || op === Op.MERGE_AND_REPLACE_LIST;

export function listenerPort(l: Listener): number | undefined {
  const a = l.address?.address;
  return a?.case === 'socketAddress' && a.value.portSpecifier.case === 'portValue' ? a.value.portSpecifier.value : undefined;
}

export function listenerMatches(l: Listener, p: CompiledPatch): boolean {
  const m = p.match?.objectTypes.case === 'listener' ? p.match.objectTypes.value : undefined;
  if (!m) return true;
  if (m.name !== '' && m.name !== l.name) return false;
  // The virtual listeners carry the port in each chain's match: filterChainMatches checks it there.
  if (p.applyTo !== ApplyTo.LISTENER && VIRTUAL_LISTENERS.has(l.name)) return true;
  return m.portNumber === 0 || listenerPort(l) === m.portNumber;
}

export function filterChainMatches(l: Listener, fc: FilterChain, p: CompiledPatch): boolean {
  const lm = p.match?.objectTypes.case === 'listener' ? p.match.objectTypes.value : undefined;
  if (!lm) return true;
  const fcm = fc.filterChainMatch;
  if (VIRTUAL_LISTENERS.has(l.name) && lm.portNumber > 0 && (fcm?.destinationPort ?? 0) !== lm.portNumber) return false;
  const m = lm.filterChain;
  if (!m) return true;
  if (m.name !== '' && m.name !== fc.name) return false;
  if (m.sni !== '' && !(fcm?.serverNames ?? []).includes(m.sni)) return false;
  if (m.transportProtocol !== '' && fcm?.transportProtocol !== m.transportProtocol) return false;
  if (m.applicationProtocols !== '') {
    if (!fcm) return false;
    if (!m.applicationProtocols.split(',').every((ap) => fcm.applicationProtocols.includes(ap))) return false;
  }
  if (m.destinationPort > 0 && fcm?.destinationPort !== m.destinationPort) return false;
  return true;
}

const filterMatch = (p: CompiledPatch) =>
  p.match?.objectTypes.case === 'listener' ? p.match.objectTypes.value.filterChain?.filter : undefined;

export const hasNetworkFilterMatch = (p: CompiledPatch): boolean => filterMatch(p) !== undefined;
export const networkFilterMatches = (f: Filter, p: CompiledPatch): boolean => {
  const m = filterMatch(p);
  return m === undefined || m.name === f.name;
};
export const hasHttpFilterMatch = (p: CompiledPatch): boolean => filterMatch(p)?.subFilter !== undefined;
export const httpFilterMatches = (f: HttpFilter, p: CompiledPatch): boolean => {
  const m = filterMatch(p)?.subFilter;
  return m === undefined || m.name === f.name;
};

const listenerFilterName = (p: CompiledPatch): string =>
  p.match?.objectTypes.case === 'listener' ? p.match.objectTypes.value.listenerFilter : '';
export const hasListenerFilterMatch = (p: CompiledPatch): boolean => listenerFilterName(p) !== '';
export const listenerFilterMatches = (f: ListenerFilter, p: CompiledPatch): boolean =>
  !hasListenerFilterMatch(p) || listenerFilterName(p) === f.name;

// ---- routes ----

const rcMatch = (p: CompiledPatch) => (p.match?.objectTypes.case === 'routeConfiguration' ? p.match.objectTypes.value : undefined);

/** istiod's ParseGatewayRDSRouteName: `http.<port>` or `https.<port>.<portName>.<gateway>.<ns>`. */
export function parseGatewayRouteName(name: string): { port: number; portName: string; gateway: string } {
  const parts = name.split('.');
  if (name.startsWith('http.') && parts.length >= 2) return { port: Number.parseInt(parts[1] ?? '', 10) || 0, portName: '', gateway: '' };
  if (name.startsWith('https.') && parts.length >= 5) {
    return { port: Number.parseInt(parts[1] ?? '', 10) || 0, portName: parts[2] ?? '', gateway: `${parts[4] ?? ''}/${parts[3] ?? ''}` };
  }
  return { port: 0, portName: '', gateway: '' };
}

/** istiod's ParseSubsetKey: `<direction>|<port>|<subset>|<host>`. */
export function parseSubsetKey(name: string): { direction: string; port: number; subset: string; host: string } {
  const parts = name.split('|');
  if (parts.length < 4) return { direction: '', port: 0, subset: '', host: '' };
  return { direction: parts[0] ?? '', port: Number.parseInt(parts[1] ?? '', 10) || 0, subset: parts[2] ?? '', host: parts[3] ?? '' };
}

/** The listener port a sidecar route configuration serves (`9080`, `inbound|9080||`; others 0). */
function routeListenerPort(name: string): number {
  if (name.startsWith('inbound')) return parseSubsetKey(name).port;
  return /^\d+$/.test(name) ? Number(name) : 0;
}

/** A gateway's target ports and the Service ports that reach each (istiod's GatewayPortMap). */
export type GatewayPortMap = ReadonlyMap<number, ReadonlySet<number>>;

export function routeConfigurationMatches(ctx: PatchContext, rc: RouteConfiguration, p: CompiledPatch, portMap?: GatewayPortMap): boolean {
  const m = rcMatch(p);
  if (!m) return true;
  if (m.name !== '' && m.name !== rc.name) return false;
  if (ctx !== PatchContext.GATEWAY) return m.portNumber === 0 || m.portNumber === routeListenerPort(rc.name);
  const g = parseGatewayRouteName(rc.name);
  if (m.portName !== '' && m.portName !== g.portName) return false;
  if (m.gateway !== '' && m.gateway !== g.gateway) return false;
  if (m.portNumber === 0) return true;
  // A route named after a target port matches the Service ports that reach it, else the port itself.
  const servicePorts = portMap?.get(g.port);
  return servicePorts ? servicePorts.has(m.portNumber) : m.portNumber === g.port;
}

export function virtualHostMatches(vh: VirtualHost, p: CompiledPatch): boolean {
  const m = rcMatch(p)?.vhost;
  if (!m) return true;
  return (m.name === '' || m.name === vh.name) && (m.domainName === '' || vh.domains.includes(m.domainName));
}

export const hasRouteMatch = (p: CompiledPatch): boolean => rcMatch(p)?.vhost?.route !== undefined;

export function routeMatches(r: Route, p: CompiledPatch): boolean {
  const m = rcMatch(p)?.vhost?.route;
  if (!m) return true;
  if (m.name !== '' && m.name !== r.name) return false;
  if (m.action === RouteAction.ANY) return true;
  switch (r.action.case) {
    case 'route':
      return m.action === RouteAction.ROUTE;
    case 'redirect':
      return m.action === RouteAction.REDIRECT;
    case 'directResponse':
      return m.action === RouteAction.DIRECT_RESPONSE;
    default:
      return true;
  }
}

// ---- clusters ----

/** istiod's clusterMatch; `hosts` are the service hostnames of an inbound cluster (its name has none). */
export function clusterMatches(c: Cluster, p: CompiledPatch, hosts: readonly string[]): boolean {
  const m = p.match?.objectTypes.case === 'cluster' ? p.match.objectTypes.value : undefined;
  if (!m) return true;
  if (m.name !== '') return m.name === c.name;
  const k = parseSubsetKey(c.name);
  const hostMatches = k.direction === 'inbound' && hosts.length > 0 ? hosts : [k.host];
  if (m.subset !== '' && m.subset !== k.subset) return false;
  if (m.service !== '' && !hostMatches.includes(m.service)) return false;
  return m.portNumber === 0 || m.portNumber === k.port;
}
