import { MeshError } from '../../util/errors.js';
import {
  parseBool,
  parseCidr,
  parseCidrList,
  parseInterfaceList,
  parseIp,
  parseOwnerList,
  parsePort,
  parsePortList,
  parseUint,
  splitList,
  type Cidr,
  type Parsed,
} from './values.js';

/**
 * The capture options as istio-iptables (and the CNI plugin's annotations) spell them: strings,
 * unvalidated. Every consumer (the `meshpilot iptables` flags, the CNI plugin's annotations) fills
 * one of these and calls resolveCaptureConfig, so both validate and default identically.
 */
export interface CaptureInput {
  proxyPort: string; // -p
  inboundCapturePort: string; // -z
  inboundTunnelPort: string; // -e
  proxyUid: string; // -u (comma list)
  proxyGid: string; // -g (comma list; '' = same as uid)
  interceptionMode: string; // -m REDIRECT | TPROXY ('' = REDIRECT)
  tproxyMark: string; // -t
  tproxyRouteTable: string; // -r
  inboundPorts: string; // -b: '*' | list | '' (no inbound capture)
  inboundPortsExclude: string; // -d
  outboundPorts: string; // -q
  outboundPortsExclude: string; // -o
  outboundIpRanges: string; // -i: '*' | CIDR list | '' (no outbound capture)
  outboundIpRangesExclude: string; // -x
  rerouteVirtualInterfaces: string; // -k
  excludeInterfaces: string; // -c
  redirectDns: boolean; // --redirect-dns
  captureAllDns: boolean; // --capture-all-dns
  dropInvalid: boolean; // --drop-invalid
  /** Whether the pod has IPv6: Istio derives it from the pod's addresses (see probe.ts). */
  enableIPv6: boolean;
  /** Name servers (from the pod's resolv.conf) whose port 53 is captured unless captureAllDns. */
  dnsServers: readonly string[];
  ownerGroupsInclude: string; // ISTIO_OUTBOUND_OWNER_GROUPS
  ownerGroupsExclude: string; // ISTIO_OUTBOUND_OWNER_GROUPS_EXCLUDE
  hostIPv4LoopbackCidr: string; // ISTIO_OUTBOUND_IPV4_LOOPBACK_CIDR
}

export type CaptureOption = keyof CaptureInput;

/** istio-iptables' own defaults (tools/common/config DefaultConfig and the env-only options). */
export const ISTIO_IPTABLES_DEFAULTS: Readonly<CaptureInput> = Object.freeze({
  proxyPort: '15001',
  inboundCapturePort: '15006',
  inboundTunnelPort: '15008',
  proxyUid: '1337',
  proxyGid: '',
  interceptionMode: '',
  tproxyMark: '1337',
  tproxyRouteTable: '133',
  inboundPorts: '',
  inboundPortsExclude: '',
  outboundPorts: '',
  outboundPortsExclude: '',
  outboundIpRanges: '',
  outboundIpRangesExclude: '',
  rerouteVirtualInterfaces: '',
  excludeInterfaces: '',
  redirectDns: false,
  captureAllDns: false,
  dropInvalid: false,
  enableIPv6: false,
  dnsServers: [],
  ownerGroupsInclude: '*',
  ownerGroupsExclude: '',
  hostIPv4LoopbackCidr: '127.0.0.1/32',
});

export type InterceptionMode = 'REDIRECT' | 'TPROXY';

/** A validated capture config: what the rule builder consumes. */
export interface CaptureConfig {
  readonly proxyPort: number;
  readonly inboundCapturePort: number;
  readonly inboundTunnelPort: number;
  readonly proxyUids: readonly string[];
  readonly proxyGids: readonly string[];
  readonly interceptionMode: InterceptionMode;
  readonly tproxyMark: number;
  readonly tproxyRouteTable: number;
  /** '*' = every port; [] = no inbound capture. */
  readonly inboundPorts: '*' | readonly number[];
  readonly inboundPortsExclude: readonly number[];
  readonly outboundPorts: readonly number[];
  readonly outboundPortsExclude: readonly number[];
  /** '*' = every destination; [] = no outbound capture (beyond -q ports). */
  readonly outboundIpRanges: '*' | readonly Cidr[];
  readonly outboundIpRangesExclude: readonly Cidr[];
  readonly rerouteVirtualInterfaces: readonly string[];
  readonly excludeInterfaces: readonly string[];
  readonly redirectDns: boolean;
  readonly captureAllDns: boolean;
  readonly dnsServersV4: readonly string[];
  readonly dnsServersV6: readonly string[];
  readonly dropInvalid: boolean;
  readonly enableIPv6: boolean;
  /** ISTIO_OUTBOUND_OWNER_GROUPS[_EXCLUDE]: capture all groups except `values`, or only `values`. */
  readonly ownerGroups: { readonly except: boolean; readonly values: readonly string[] };
  readonly hostIPv4LoopbackCidr: string;
}

/** How each option is named in errors, unless the caller says otherwise (flags, env, annotations). */
export const DEFAULT_OPTION_LABELS: Readonly<Record<CaptureOption, string>> = {
  proxyPort: '-p/--envoy-port',
  inboundCapturePort: '-z/--inbound-capture-port',
  inboundTunnelPort: '-e/--inbound-tunnel-port',
  proxyUid: '-u/--proxy-uid',
  proxyGid: '-g/--proxy-gid',
  interceptionMode: '-m/--istio-inbound-interception-mode',
  tproxyMark: '-t/--istio-inbound-tproxy-mark',
  tproxyRouteTable: '-r/--istio-inbound-tproxy-route-table',
  inboundPorts: '-b/--istio-inbound-ports',
  inboundPortsExclude: '-d/--istio-local-exclude-ports',
  outboundPorts: '-q/--istio-outbound-ports',
  outboundPortsExclude: '-o/--istio-local-outbound-ports-exclude',
  outboundIpRanges: '-i/--istio-service-cidr',
  outboundIpRangesExclude: '-x/--istio-service-exclude-cidr',
  rerouteVirtualInterfaces: '-k/--kube-virt-interfaces',
  excludeInterfaces: '-c/--istio-exclude-interfaces',
  redirectDns: '--redirect-dns',
  captureAllDns: '--capture-all-dns',
  dropInvalid: '--drop-invalid',
  enableIPv6: 'IPv6 detection',
  dnsServers: 'DNS servers (resolv.conf)',
  ownerGroupsInclude: 'ISTIO_OUTBOUND_OWNER_GROUPS',
  ownerGroupsExclude: 'ISTIO_OUTBOUND_OWNER_GROUPS_EXCLUDE',
  hostIPv4LoopbackCidr: 'ISTIO_OUTBOUND_IPV4_LOOPBACK_CIDR',
};

/** Istio folds all owner-group includes into one rule; it caps them so the rule stays loadable. */
const MAX_OWNER_GROUPS_INCLUDE = 64;

/**
 * Validates and types a capture input. Throws MeshError(INVALID_ARGUMENT) naming the option and
 * the offending value; nothing is built or applied from an input that fails here.
 */
export function resolveCaptureConfig(input: CaptureInput, labels: Partial<Record<CaptureOption, string>> = {}): CaptureConfig {
  const need = <T>(option: CaptureOption, r: Parsed<T>): T => {
    if (r.ok) return r.value;
    const raw = input[option];
    const shown = Array.isArray(raw) ? raw.join(',') : String(raw);
    const label = labels[option] ?? DEFAULT_OPTION_LABELS[option];
    throw new MeshError('INVALID_ARGUMENT', `invalid ${label} value "${shown}": ${r.reason}`);
  };
  const fail = (reason: string): Parsed<never> => ({ ok: false, reason });

  const mode = input.interceptionMode === '' ? 'REDIRECT' : input.interceptionMode;
  const interceptionMode = need<InterceptionMode>(
    'interceptionMode',
    mode === 'REDIRECT' || mode === 'TPROXY' ? { ok: true, value: mode } : fail('the mode must be REDIRECT or TPROXY'),
  );

  const proxyUids = need('proxyUid', parseOwnerList(input.proxyUid, 'uid'));
  if (proxyUids.length === 0) need('proxyUid', fail('at least one uid is required'));
  const gidText = input.proxyGid === '' ? input.proxyUid : input.proxyGid;
  const proxyGids = need('proxyGid', parseOwnerList(gidText, 'gid'));

  const inboundPorts = input.inboundPorts.trim() === '*' ? '*' : need('inboundPorts', parsePortList(input.inboundPorts));
  const outboundIpRanges = input.outboundIpRanges.trim() === '*' ? '*' : need('outboundIpRanges', parseCidrList(input.outboundIpRanges));
  if (input.outboundIpRangesExclude.trim() === '*') need('outboundIpRangesExclude', fail('"*" is not allowed here'));

  const dnsV4: string[] = [];
  const dnsV6: string[] = [];
  for (const s of input.dnsServers) {
    const ip = need('dnsServers', parseIp(s));
    (ip.family === 4 ? dnsV4 : dnsV6).push(ip.text);
  }

  const loopback = need('hostIPv4LoopbackCidr', parseCidr(input.hostIPv4LoopbackCidr));
  const bits = Number(loopback.text.split('/')[1]);
  if (loopback.family !== 4 || !loopback.loopback || bits < 8) {
    need('hostIPv4LoopbackCidr', fail('an IPv4 loopback CIDR with a prefix length of 8-32 is required'));
  }

  const groupsExcept = input.ownerGroupsInclude.trim() === '*';
  const groupValues = groupsExcept
    ? need('ownerGroupsExclude', parseOwnerList(input.ownerGroupsExclude, 'group'))
    : need('ownerGroupsInclude', parseOwnerList(input.ownerGroupsInclude, 'group'));
  if (!groupsExcept && groupValues.length > MAX_OWNER_GROUPS_INCLUDE) {
    need('ownerGroupsInclude', fail(`at most ${MAX_OWNER_GROUPS_INCLUDE} groups can be listed`));
  }

  return {
    proxyPort: need('proxyPort', parsePort(input.proxyPort)),
    inboundCapturePort: need('inboundCapturePort', parsePort(input.inboundCapturePort)),
    inboundTunnelPort: need('inboundTunnelPort', parsePort(input.inboundTunnelPort)),
    proxyUids,
    proxyGids,
    interceptionMode,
    tproxyMark: need('tproxyMark', parseUint(input.tproxyMark, 1, 0xffffffff)),
    // 0 and 253-255 are the kernel's unspec/default/main/local tables: never ours to fill.
    tproxyRouteTable: need(
      'tproxyRouteTable',
      [0, 253, 254, 255].includes(Number(input.tproxyRouteTable))
        ? fail('tables 0 and 253-255 are reserved by the kernel')
        : parseUint(input.tproxyRouteTable, 1, 0xffffffff),
    ),
    inboundPorts,
    inboundPortsExclude: need('inboundPortsExclude', parsePortList(input.inboundPortsExclude)),
    outboundPorts: need('outboundPorts', parsePortList(input.outboundPorts)),
    outboundPortsExclude: need('outboundPortsExclude', parsePortList(input.outboundPortsExclude)),
    outboundIpRanges,
    outboundIpRangesExclude: need('outboundIpRangesExclude', parseCidrList(input.outboundIpRangesExclude)),
    rerouteVirtualInterfaces: need('rerouteVirtualInterfaces', parseInterfaceList(input.rerouteVirtualInterfaces)),
    excludeInterfaces: need('excludeInterfaces', parseInterfaceList(input.excludeInterfaces)),
    redirectDns: input.redirectDns,
    captureAllDns: input.captureAllDns,
    dnsServersV4: dnsV4,
    dnsServersV6: dnsV6,
    dropInvalid: input.dropInvalid,
    enableIPv6: input.enableIPv6,
    ownerGroups: { except: groupsExcept, values: groupValues },
    hostIPv4LoopbackCidr: loopback.text,
  };
}

/** Boolean option text (env, annotation) → boolean, with the option named on error. */
export function parseBoolOption(label: string, value: string): boolean {
  const r = parseBool(value.trim());
  if (!r.ok) throw new MeshError('INVALID_ARGUMENT', `invalid ${label} value "${value}": ${r.reason}`);
  return r.value;
}

export { splitList };
