import { isIP } from 'node:net';
import type { Address } from '../gen/envoy/config/core/v3/address_pb.js';
import {
  FilterChainMatch_ConnectionSourceType,
  type FilterChain,
  type FilterChainMatch,
  type ListenerFilterChainMatchPredicate,
} from '../gen/envoy/config/listener/v3/listener_components_pb.js';
import type { Listener } from '../gen/envoy/config/listener/v3/listener_pb.js';
import type { Downstream } from './context.js';
import { anyTypeName, cidrMatchLength, isLoopback } from './matchers.js';

/** Where istio-iptables redirects captured traffic. */
export const OUTBOUND_CAPTURE_PORT = 15001;
export const INBOUND_CAPTURE_PORT = 15006;
const VIRTUAL_OUTBOUND = 'virtualOutbound';
const VIRTUAL_INBOUND = 'virtualInbound';

interface Bound {
  readonly ip: string;
  readonly port: number;
}

function socket(a: Address | undefined): Bound | undefined {
  if (a?.address.case !== 'socketAddress') return undefined;
  const s = a.address.value;
  return s.portSpecifier.case === 'portValue' ? { ip: s.address, port: s.portSpecifier.value } : undefined;
}

function boundAddresses(l: Listener): Bound[] {
  return [l.address, ...l.additionalAddresses.map((a) => a.address)].map(socket).filter((b): b is Bound => b !== undefined);
}

const isAnyAddress = (ip: string): boolean => ip === '0.0.0.0' || ip === '::';

/**
 * The listener Envoy associates with a destination (ConnectionHandler getBalancedHandlerByAddress):
 * one bound to exactly that IP and port, else a wildcard (0.0.0.0 / ::) on the port.
 */
export function listenerForAddress(listeners: readonly Listener[], ip: string, port: number, except?: Listener): Listener | undefined {
  const candidates = listeners.filter((l) => l !== except);
  const exact = candidates.find((l) => boundAddresses(l).some((b) => b.port === port && b.ip === ip));
  if (exact) return exact;
  const v6 = isIP(ip) === 6;
  return candidates.find((l) => boundAddresses(l).some((b) => b.port === port && isAnyAddress(b.ip) && (b.ip === '::' || !v6)));
}

function captureListener(listeners: readonly Listener[], name: string, port: number): Listener | undefined {
  return (
    listeners.find((l) => l.name === name) ?? listeners.find((l) => boundAddresses(l).some((b) => b.port === port && isAnyAddress(b.ip)))
  );
}

export type CallMode = 'outbound' | 'inbound' | 'gateway';

export interface ListenerPick {
  readonly listener?: Listener;
  /** The port that chain matching and RBAC see as the destination. */
  readonly port: number;
  readonly error?: string;
}

/**
 * Which listener gets the connection. Captured traffic (outbound → 15001, inbound → 15006) lands
 * on the capture listener; with use_original_dst Envoy hands it to the listener of the original
 * destination, and keeps it when there is none. Gateways have no capture: the listener bound on
 * the port takes it.
 */
export function selectListener(
  listeners: readonly Listener[],
  mode: CallMode,
  ip: string,
  port: number,
  listenerPort?: number,
): ListenerPick {
  if (mode === 'gateway') {
    const p = listenerPort ?? port;
    const l = listenerForAddress(listeners, ip, p);
    return l ? { listener: l, port: p } : { port: p, error: `no listener on ${ip}:${p}` };
  }
  const capture =
    mode === 'outbound'
      ? captureListener(listeners, VIRTUAL_OUTBOUND, OUTBOUND_CAPTURE_PORT)
      : captureListener(listeners, VIRTUAL_INBOUND, INBOUND_CAPTURE_PORT);
  if (!capture) return { port, error: `no ${mode} capture listener` };
  if (!capture.useOriginalDst) return { listener: capture, port };
  return { listener: listenerForAddress(listeners, ip, port, capture) ?? capture, port };
}

function predicateMatches(p: ListenerFilterChainMatchPredicate, port: number): boolean {
  const r = p.rule;
  switch (r.case) {
    case 'anyMatch':
      return r.value;
    case 'notMatch':
      return !predicateMatches(r.value, port);
    case 'andMatch':
      return r.value.rules.every((x) => predicateMatches(x, port));
    case 'orMatch':
      return r.value.rules.some((x) => predicateMatches(x, port));
    case 'destinationPortRange':
      return port >= r.value.start && port < r.value.end;
    case undefined:
      return false;
  }
}

/** Whether a listener filter of this kind (tls_inspector, http_inspector) runs for the port. */
export function hasListenerFilter(l: Listener, kind: 'tls_inspector' | 'http_inspector', port: number): boolean {
  const typeName =
    kind === 'tls_inspector'
      ? 'envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector'
      : 'envoy.extensions.filters.listener.http_inspector.v3.HttpInspector';
  return l.listenerFilters.some((f) => {
    const isKind =
      f.configType.case === 'typedConfig' ? anyTypeName(f.configType.value) === typeName : f.name === `envoy.filters.listener.${kind}`;
    return isKind && !(f.filterDisabled && predicateMatches(f.filterDisabled, port));
  });
}

/** Keeps the chains whose criterion matches best (score ≥ 0); none → those without the criterion. */
function narrow(
  chains: readonly FilterChain[],
  has: (m: FilterChainMatch) => boolean,
  score: (m: FilterChainMatch) => number,
): FilterChain[] {
  const m = (c: FilterChain): FilterChainMatch | undefined => c.filterChainMatch;
  let best = -1;
  for (const c of chains) {
    const fm = m(c);
    if (fm && has(fm)) best = Math.max(best, score(fm));
  }
  if (best >= 0)
    return chains.filter((c) => {
      const fm = m(c);
      return fm !== undefined && has(fm) && score(fm) === best;
    });
  return chains.filter((c) => {
    const fm = m(c);
    return fm === undefined || !has(fm);
  });
}

/** Longest-prefix narrowing; chains without ranges stand for /0 (Envoy's trie holds them as 0.0.0.0/0). */
function narrowCidr(
  chains: readonly FilterChain[],
  ranges: (m: FilterChainMatch) => FilterChainMatch['prefixRanges'],
  ip: string | undefined,
): FilterChain[] {
  const score = (c: FilterChain): number => {
    const rs = c.filterChainMatch ? ranges(c.filterChainMatch) : [];
    return rs.length === 0 ? 0 : Math.max(-1, ...rs.map((r) => cidrMatchLength(r, ip)));
  };
  const best = Math.max(-1, ...chains.map(score));
  return best < 0 ? [] : chains.filter((c) => score(c) === best);
}

/** server_names: exact SNI, then the longest `*.suffix`, then chains without server names. */
function serverNameScore(names: readonly string[], sni: string | undefined): number {
  if (!sni) return -1;
  const host = sni.toLowerCase();
  const lower = names.map((n) => n.toLowerCase());
  if (lower.includes(host)) return Number.MAX_SAFE_INTEGER;
  let best = -1;
  for (const n of lower) if (n.startsWith('*.') && host.endsWith(n.slice(1)) && host.length > n.length - 1) best = Math.max(best, n.length);
  return best;
}

function sourceTypeScore(t: FilterChainMatch_ConnectionSourceType, d: Downstream): number {
  const local = d.srcIp !== undefined && (isLoopback(d.srcIp) || d.srcIp === d.dstIp);
  if (t === FilterChainMatch_ConnectionSourceType.SAME_IP_OR_LOOPBACK) return local ? 1 : -1;
  if (t === FilterChainMatch_ConnectionSourceType.EXTERNAL) return local ? -1 : 1;
  return -1;
}

/**
 * Envoy's FilterChainMatch sieve (listener_components.proto): destination port, destination IP
 * (longest prefix), server name, transport protocol, application protocols, direct source IP,
 * source type, source IP, source port. Each step keeps only the most specific matching chains,
 * falling back to those that leave the criterion unset — so a chain that is more specific at an
 * early step shadows a catch-all even when it fails a later step (then the default chain, if any,
 * takes the connection).
 */
export function matchFilterChain(l: Listener, d: Downstream): { chain?: FilterChain; name?: string; error?: string } {
  let chains: FilterChain[] = [...l.filterChains];
  chains = narrow(
    chains,
    (m) => m.destinationPort !== undefined && m.destinationPort !== 0,
    (m) => (m.destinationPort === d.dstPort ? 0 : -1),
  );
  chains = narrowCidr(chains, (m) => m.prefixRanges, d.dstIp);
  chains = narrow(
    chains,
    (m) => m.serverNames.length > 0,
    (m) => serverNameScore(m.serverNames, d.sni),
  );
  chains = narrow(
    chains,
    (m) => m.transportProtocol !== '',
    (m) => (m.transportProtocol === d.transportProtocol ? 0 : -1),
  );
  // The first offered ALPN that some chain lists decides (Envoy walks the client's list in order).
  chains = narrow(
    chains,
    (m) => m.applicationProtocols.length > 0,
    (m) => {
      const i = d.alpn.findIndex((a) => m.applicationProtocols.includes(a));
      return i < 0 ? -1 : d.alpn.length - i;
    },
  );
  chains = narrowCidr(chains, (m) => m.directSourcePrefixRanges, d.srcIp);
  chains = narrow(
    chains,
    (m) => m.sourceType !== FilterChainMatch_ConnectionSourceType.ANY,
    (m) => sourceTypeScore(m.sourceType, d),
  );
  chains = narrowCidr(chains, (m) => m.sourcePrefixRanges, d.srcIp);
  chains = narrow(
    chains,
    (m) => m.sourcePorts.length > 0,
    (m) => (d.srcPort !== undefined && m.sourcePorts.includes(d.srcPort) ? 0 : -1),
  );
  if (chains.length > 1) return { error: `multiple filter chains matched: ${chains.map((c) => chainName(l, c)).join(', ')}` };
  const chain = chains[0] ?? l.defaultFilterChain;
  if (!chain) return { error: 'no matching filter chain' };
  return { chain, name: chainName(l, chain) };
}

/** A chain's name, or its position when istiod left it unnamed. */
export function chainName(l: Listener, c: FilterChain): string {
  if (c.name !== '') return c.name;
  if (c === l.defaultFilterChain) return 'default_filter_chain';
  return `filter_chains[${l.filterChains.indexOf(c)}]`;
}
