import type { CaptureConfig } from './config.js';
import { CHAINS, type Rule, type RuleSet, type Table } from './rules.js';

/**
 * Builds the ordered rule set for a validated config, rule for rule and in the order istio-iptables
 * emits them (tools/istio-iptables/pkg/capture), so the rendered iptables-restore input is
 * byte-identical to Istio's for the same options. Pure: no I/O.
 */

const DNS_AGENT_PORT = '15053';
/** Envoy marks its outbound→inbound loopback packets with this in TPROXY mode (Istio's OutboundMark). */
const OUTBOUND_MARK = '1338';
/** Where Envoy's inbound passthrough binds from, so those connections are not captured again. */
const INBOUND_PASSTHROUGH_SRC = { v4: '127.0.0.6/32', v6: '::6/128' };
const V6_LOOPBACK = '::1/128';

type Family = 'v4' | 'v6';

class Rules {
  readonly v4: Rule[] = [];
  readonly v6: Rule[] = [];
  constructor(private readonly ipv6: boolean) {}

  private push(f: Family, table: Table, chain: string, spec: readonly string[], insertAt?: number): void {
    if (f === 'v6' && !this.ipv6) return;
    this[f].push(insertAt === undefined ? { table, chain, spec } : { table, chain, insertAt, spec });
  }
  add(table: Table, chain: string, ...spec: string[]): void {
    this.push('v4', table, chain, spec);
    this.push('v6', table, chain, spec);
  }
  addTo(f: Family, table: Table, chain: string, ...spec: string[]): void {
    this.push(f, table, chain, spec);
  }
  insert(table: Table, chain: string, at: number, ...spec: string[]): void {
    this.push('v4', table, chain, spec, at);
    this.push('v6', table, chain, spec, at);
  }
  insertTo(f: Family, table: Table, chain: string, at: number, ...spec: string[]): void {
    this.push(f, table, chain, spec, at);
  }
  /** A rule naming an address that differs per family (loopback, passthrough source). */
  addVersioned(addr: { v4: string; v6: string }, table: Table, chain: string, spec: (a: string) => string[]): void {
    this.push('v4', table, chain, spec(addr.v4));
    this.push('v6', table, chain, spec(addr.v6));
  }
}

export function buildCaptureRules(cfg: CaptureConfig): RuleSet {
  const r = new Rules(cfg.enableIPv6);
  const tproxy = cfg.interceptionMode === 'TPROXY';
  const loopback = { v4: cfg.hostIPv4LoopbackCidr, v6: V6_LOOPBACK };
  const tunnel = String(cfg.inboundTunnelPort);
  const mark = String(cfg.tproxyMark);
  const includes = cfg.outboundIpRanges === '*' ? [] : cfg.outboundIpRanges;
  // An explicitly included loopback range means app→self over lo must be captured too.
  const includesLoopback = includes.some((c) => c.loopback);
  // Istio drops DNS capture when it has nowhere to send it (no servers and not capture-all).
  const dns = cfg.redirectDns && (cfg.captureAllDns || cfg.dnsServersV4.length + cfg.dnsServersV6.length > 0);

  for (const nic of cfg.excludeInterfaces) {
    r.add('nat', 'PREROUTING', '-i', nic, '-j', 'RETURN');
    r.add('nat', 'OUTPUT', '-o', nic, '-j', 'RETURN');
  }
  if (tproxy) {
    for (const nic of cfg.excludeInterfaces) {
      r.add('mangle', 'PREROUTING', '-i', nic, '-j', 'RETURN');
      r.add('mangle', 'OUTPUT', '-o', nic, '-j', 'RETURN');
    }
  }
  for (const nic of cfg.rerouteVirtualInterfaces) r.insert('nat', 'PREROUTING', 1, '-i', nic, '-j', 'RETURN');

  if (cfg.dropInvalid) {
    r.add('mangle', 'PREROUTING', '-m', 'conntrack', '--ctstate', 'INVALID', '-j', CHAINS.DROP);
    r.add('mangle', CHAINS.DROP, '-j', 'DROP');
  }

  r.add('nat', CHAINS.INBOUND, '-p', 'tcp', '--dport', tunnel, '-j', 'RETURN');
  r.add('nat', CHAINS.REDIRECT, '-p', 'tcp', '-j', 'REDIRECT', '--to-ports', String(cfg.proxyPort));
  r.add('nat', CHAINS.IN_REDIRECT, '-p', 'tcp', '-j', 'REDIRECT', '--to-ports', String(cfg.inboundCapturePort));

  addInbound(r, cfg, loopback);

  r.add('nat', 'OUTPUT', '-j', CHAINS.OUTPUT);
  for (const p of cfg.outboundPortsExclude) {
    r.add('nat', CHAINS.OUTPUT, '-p', 'tcp', '--dport', String(p), '-j', 'RETURN');
    r.add('nat', CHAINS.OUTPUT, '-p', 'udp', '--dport', String(p), '-j', 'RETURN');
  }
  r.addVersioned(INBOUND_PASSTHROUGH_SRC, 'nat', CHAINS.OUTPUT, (a) => ['-o', 'lo', '-s', a, '-j', 'RETURN']);

  for (const [owner, ids] of [
    ['--uid-owner', cfg.proxyUids],
    ['--gid-owner', cfg.proxyGids],
  ] as const) {
    for (const id of ids) {
      // The proxy calling the pod's own address over lo (app → VIP → Envoy → Envoy → app) goes
      // to the inbound listener. With DNS capture only the uid rule spares port 53, as in Istio.
      const ports = dns && owner === '--uid-owner' ? ['-m', 'multiport', '!', '--dports', `53,${tunnel}`] : ['!', '--dport', tunnel];
      r.addVersioned(loopback, 'nat', CHAINS.OUTPUT, (a) => [
        '-o',
        'lo',
        '!',
        '-d',
        a,
        '-p',
        'tcp',
        ...ports,
        '-m',
        'owner',
        owner,
        id,
        '-j',
        CHAINS.IN_REDIRECT,
      ]);
      // Other processes talking over lo stay uncaptured (TCP to port 53 excepted with DNS capture).
      if (!includesLoopback) {
        const dnsPart = dns ? ['-p', 'tcp', '!', '--dport', '53'] : [];
        r.add('nat', CHAINS.OUTPUT, '-o', 'lo', ...dnsPart, '-m', 'owner', '!', owner, id, '-j', 'RETURN');
      }
      // The proxy's own traffic is never captured (no loops).
      r.add('nat', CHAINS.OUTPUT, '-m', 'owner', owner, id, '-j', 'RETURN');
    }
  }

  if (cfg.ownerGroups.except) {
    for (const g of cfg.ownerGroups.values) r.add('nat', CHAINS.OUTPUT, '-m', 'owner', '--gid-owner', g, '-j', 'RETURN');
  } else {
    const noneOf = cfg.ownerGroups.values.flatMap((g) => ['-m', 'owner', '!', '--gid-owner', g]);
    r.add('nat', CHAINS.OUTPUT, ...noneOf, '-j', 'RETURN');
  }

  if (dns) addDns(r, cfg);

  r.addVersioned(loopback, 'nat', CHAINS.OUTPUT, (a) => ['-d', a, '-j', 'RETURN']);
  const excludes = cfg.outboundIpRangesExclude;
  for (const f of ['v4', 'v6'] as const) {
    for (const c of excludes) if (familyOf(c.family) === f) r.addTo(f, 'nat', CHAINS.OUTPUT, '-d', c.text, '-j', 'RETURN');
  }
  for (const p of cfg.outboundPorts) r.add('nat', CHAINS.OUTPUT, '-p', 'tcp', '--dport', String(p), '-j', CHAINS.REDIRECT);

  for (const f of ['v4', 'v6'] as const) {
    if (cfg.outboundIpRanges === '*') {
      r.addTo(f, 'nat', CHAINS.OUTPUT, '-j', CHAINS.REDIRECT);
      for (const nic of cfg.rerouteVirtualInterfaces) r.insertTo(f, 'nat', 'PREROUTING', 1, '-i', nic, '-j', CHAINS.REDIRECT);
      continue;
    }
    for (const c of includes) {
      if (familyOf(c.family) !== f) continue;
      for (const nic of cfg.rerouteVirtualInterfaces) {
        r.insertTo(f, 'nat', 'PREROUTING', 1, '-i', nic, '-d', c.text, '-j', CHAINS.REDIRECT);
      }
      r.addTo(f, 'nat', CHAINS.OUTPUT, '-d', c.text, '-j', CHAINS.REDIRECT);
    }
  }

  if (tproxy) {
    // Keep Envoy's original_src mark on the connection, and route its replies back via lo.
    r.add('mangle', 'PREROUTING', '-p', 'tcp', '-m', 'mark', '--mark', mark, '-j', 'CONNMARK', '--save-mark');
    r.add('mangle', 'OUTPUT', '-p', 'tcp', '-o', 'lo', '-m', 'mark', '--mark', mark, '-j', 'RETURN');
    for (const [owner, ids] of [
      ['--uid-owner', cfg.proxyUids],
      ['--gid-owner', cfg.proxyGids],
    ] as const) {
      for (const id of ids) {
        r.addVersioned(loopback, 'mangle', 'OUTPUT', (a) => [
          '!',
          '-d',
          a,
          '-p',
          'tcp',
          '-o',
          'lo',
          '-m',
          'owner',
          owner,
          id,
          '-j',
          'MARK',
          '--set-mark',
          OUTBOUND_MARK,
        ]);
      }
    }
    r.add('mangle', 'OUTPUT', '-p', 'tcp', '-m', 'connmark', '--mark', mark, '-j', 'CONNMARK', '--restore-mark');
    r.insert('mangle', CHAINS.INBOUND, 1, '-p', 'tcp', '-m', 'mark', '--mark', mark, '-j', 'RETURN');
    r.insertTo('v4', 'mangle', CHAINS.INBOUND, 2, '-p', 'tcp', '-s', INBOUND_PASSTHROUGH_SRC.v4, '-i', 'lo', '-j', 'RETURN');
    r.insertTo('v6', 'mangle', CHAINS.INBOUND, 2, '-p', 'tcp', '-s', INBOUND_PASSTHROUGH_SRC.v6, '-i', 'lo', '-j', 'RETURN');
    r.insert('mangle', CHAINS.INBOUND, 3, '-p', 'tcp', '-i', 'lo', '-m', 'mark', '!', '--mark', OUTBOUND_MARK, '-j', 'RETURN');
  }

  const hasInbound = cfg.inboundPorts === '*' || cfg.inboundPorts.length > 0;
  return {
    ipv4: r.v4,
    ipv6: r.v6,
    enableIPv6: cfg.enableIPv6,
    ...(tproxy && hasInbound ? { tproxyRoute: { mark: cfg.tproxyMark, table: cfg.tproxyRouteTable } } : {}),
  };
}

function familyOf(f: 4 | 6): Family {
  return f === 4 ? 'v4' : 'v6';
}

/** Inbound capture: REDIRECT to the inbound port in nat, or TPROXY (mark + divert) in mangle. */
function addInbound(r: Rules, cfg: CaptureConfig, loopback: { v4: string; v6: string }): void {
  const ports = cfg.inboundPorts;
  if (ports !== '*' && ports.length === 0) return;
  const tproxy = cfg.interceptionMode === 'TPROXY';
  const mark = String(cfg.tproxyMark);
  const table: Table = tproxy ? 'mangle' : 'nat';
  if (tproxy) {
    r.add('mangle', CHAINS.DIVERT, '-j', 'MARK', '--set-mark', mark);
    r.add('mangle', CHAINS.DIVERT, '-j', 'ACCEPT');
    r.addVersioned(loopback, 'mangle', CHAINS.TPROXY, (a) => [
      '!',
      '-d',
      a,
      '-p',
      'tcp',
      '-j',
      'TPROXY',
      '--tproxy-mark',
      `${mark}/0xffffffff`,
      '--on-port',
      String(cfg.inboundCapturePort),
    ]);
  }
  r.add(table, 'PREROUTING', '-p', 'tcp', '-j', CHAINS.INBOUND);
  if (ports === '*') {
    for (const p of cfg.inboundPortsExclude) r.add(table, CHAINS.INBOUND, '-p', 'tcp', '--dport', String(p), '-j', 'RETURN');
    if (tproxy) {
      // Packets of established sockets go straight to lo; new connections are TPROXYed.
      r.add('mangle', CHAINS.INBOUND, '-p', 'tcp', '-m', 'conntrack', '--ctstate', 'RELATED,ESTABLISHED', '-j', CHAINS.DIVERT);
      r.add('mangle', CHAINS.INBOUND, '-p', 'tcp', '-j', CHAINS.TPROXY);
    } else {
      r.add('nat', CHAINS.INBOUND, '-p', 'tcp', '-j', CHAINS.IN_REDIRECT);
    }
    return;
  }
  for (const port of ports) {
    const p = String(port);
    if (tproxy) {
      r.add(
        'mangle',
        CHAINS.INBOUND,
        '-p',
        'tcp',
        '--dport',
        p,
        '-m',
        'conntrack',
        '--ctstate',
        'RELATED,ESTABLISHED',
        '-j',
        CHAINS.DIVERT,
      );
      r.add('mangle', CHAINS.INBOUND, '-p', 'tcp', '--dport', p, '-j', CHAINS.TPROXY);
    } else {
      r.add('nat', CHAINS.INBOUND, '-p', 'tcp', '--dport', p, '-j', CHAINS.IN_REDIRECT);
    }
  }
}

/**
 * DNS capture: TCP and UDP port 53 (to every server with --capture-all-dns, else to the pod's
 * resolv.conf servers) go to the agent's DNS proxy on 15053; UDP DNS is split into two conntrack
 * zones (proxy↔upstream = 1, app↔proxy = 2) so the two legs' NAT entries cannot collide.
 */
function addDns(r: Rules, cfg: CaptureConfig): void {
  const all = cfg.captureAllDns;
  r.add('raw', 'OUTPUT', '-j', CHAINS.OUTPUT_DNS);
  if (all || cfg.dnsServersV4.length > 0) r.addTo('v4', 'nat', CHAINS.OUTPUT, '-j', CHAINS.OUTPUT_DNS);
  if (all || cfg.dnsServersV6.length > 0) r.addTo('v6', 'nat', CHAINS.OUTPUT, '-j', CHAINS.OUTPUT_DNS);
  const servers = [
    ['v4', cfg.dnsServersV4, '/32'],
    ['v6', cfg.dnsServersV6, '/128'],
  ] as const;
  // Istio spells the UDP target's option --to-port (an accepted alias); kept for identical output.
  for (const [proto, toPorts] of [
    ['tcp', '--to-ports'],
    ['udp', '--to-port'],
  ] as const) {
    if (all) {
      r.add('nat', CHAINS.OUTPUT_DNS, '-p', proto, '--dport', '53', '-j', 'REDIRECT', toPorts, DNS_AGENT_PORT);
      continue;
    }
    for (const [f, list, bits] of servers) {
      for (const s of list)
        r.addTo(f, 'nat', CHAINS.OUTPUT_DNS, '-p', proto, '--dport', '53', '-d', s + bits, '-j', 'REDIRECT', toPorts, DNS_AGENT_PORT);
    }
  }
  for (const [owner, ids] of [
    ['--uid-owner', cfg.proxyUids],
    ['--gid-owner', cfg.proxyGids],
  ] as const) {
    for (const id of ids) {
      r.add('raw', CHAINS.OUTPUT_DNS, '-p', 'udp', '--dport', '53', '-m', 'owner', owner, id, '-j', 'CT', '--zone', '1');
      r.add('raw', CHAINS.OUTPUT_DNS, '-p', 'udp', '--sport', DNS_AGENT_PORT, '-m', 'owner', owner, id, '-j', 'CT', '--zone', '2');
    }
  }
  if (all) {
    r.add('raw', 'PREROUTING', '-j', CHAINS.INBOUND);
    r.add('raw', CHAINS.OUTPUT_DNS, '-p', 'udp', '--dport', '53', '-j', 'CT', '--zone', '2');
    r.add('raw', CHAINS.INBOUND, '-p', 'udp', '--sport', '53', '-j', 'CT', '--zone', '1');
    return;
  }
  for (const [f, list, bits] of servers) {
    if (list.length > 0) r.addTo(f, 'raw', 'PREROUTING', '-j', CHAINS.INBOUND);
    for (const s of list) {
      r.addTo(f, 'raw', CHAINS.OUTPUT_DNS, '-p', 'udp', '--dport', '53', '-d', s + bits, '-j', 'CT', '--zone', '2');
      r.addTo(f, 'raw', CHAINS.INBOUND, '-p', 'udp', '--sport', '53', '-s', s + bits, '-j', 'CT', '--zone', '1');
    }
  }
}
