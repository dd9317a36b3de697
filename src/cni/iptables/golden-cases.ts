import { ISTIO_IPTABLES_DEFAULTS, type CaptureInput } from './config.js';

/**
 * Option sets with a golden rendering each (testdata/iptables/<name>.golden). The first group
 * carries the names and options of istio-iptables' own capture goldens
 * (tools/istio-iptables/pkg/capture/testdata), whose rule text ours was checked against line for
 * line; the second covers the options those leave out. Shared by the builder's golden test and the
 * netns runner test, which loads every one of them into real iptables.
 */
export interface GoldenCase {
  readonly name: string;
  readonly input: Partial<CaptureInput>;
}

export const ISTIO_CASES: readonly GoldenCase[] = [
  { name: 'ipv6-empty-inbound-ports', input: { enableIPv6: true } },
  {
    name: 'ip-range',
    input: {
      outboundIpRangesExclude: '1.1.0.0/16',
      outboundIpRanges: '9.9.0.0/16',
      redirectDns: true,
      proxyGid: '1,2',
      proxyUid: '3,4',
      dnsServers: ['127.0.0.53'],
    },
  },
  {
    name: 'tproxy',
    input: {
      interceptionMode: 'TPROXY',
      inboundPorts: '*',
      outboundIpRangesExclude: '1.1.0.0/16',
      outboundIpRanges: '9.9.0.0/16',
      redirectDns: true,
      dnsServers: ['127.0.0.53'],
      excludeInterfaces: 'not-istio-nic',
      enableIPv6: true,
    },
  },
  { name: 'ipv6-inbound-ports', input: { inboundPorts: '4000,5000', enableIPv6: true } },
  { name: 'ipv6-virt-interfaces', input: { inboundPorts: '4000,5000', rerouteVirtualInterfaces: 'eth0,eth1', enableIPv6: true } },
  {
    name: 'ipv6-ipnets',
    input: {
      inboundPorts: '4000,5000',
      inboundPortsExclude: '6000,7000,',
      rerouteVirtualInterfaces: 'eth0,eth1',
      outboundIpRangesExclude: '2001:db8::/32',
      outboundIpRanges: '2001:db8::/32',
      enableIPv6: true,
    },
  },
  {
    name: 'ipv6-uid-gid',
    input: {
      inboundPorts: '4000,5000',
      inboundPortsExclude: '6000,7000',
      rerouteVirtualInterfaces: 'eth0,eth1',
      proxyGid: '1,2',
      proxyUid: '3,4',
      enableIPv6: true,
      outboundIpRangesExclude: '2001:db8::/32',
      outboundIpRanges: '2001:db8::/32',
    },
  },
  { name: 'ipv6-outbound-ports', input: { outboundPorts: '32000,31000', enableIPv6: true } },
  { name: 'empty', input: {} },
  { name: 'kube-virt-interfaces', input: { rerouteVirtualInterfaces: 'eth1,eth2', outboundIpRanges: '*' } },
  { name: 'ipnets', input: { outboundIpRanges: '10.0.0.0/8' } },
  { name: 'ipnets-with-kube-virt-interfaces', input: { rerouteVirtualInterfaces: 'eth1,eth2', outboundIpRanges: '10.0.0.0/8' } },
  { name: 'inbound-ports-include', input: { inboundPorts: '32000,31000' } },
  { name: 'inbound-ports-wildcard', input: { inboundPorts: '*' } },
  { name: 'inbound-ports-tproxy', input: { inboundPorts: '32000,31000', interceptionMode: 'TPROXY' } },
  { name: 'inbound-ports-wildcard-tproxy', input: { inboundPorts: '*', interceptionMode: 'TPROXY' } },
  {
    name: 'dns-uid-gid',
    input: { redirectDns: true, dnsServers: ['127.0.0.53', '2001:db8::53'], proxyGid: '1,2', proxyUid: '3,4', enableIPv6: true },
  },
  { name: 'ipv6-dns-uid-gid', input: { enableIPv6: true, redirectDns: true, proxyGid: '1,2', proxyUid: '3,4' } },
  { name: 'outbound-owner-groups', input: { ownerGroupsInclude: 'java,202' } },
  { name: 'outbound-owner-groups-exclude', input: { ownerGroupsExclude: '888,ftp' } },
  { name: 'ipv6-dns-outbound-owner-groups', input: { enableIPv6: true, redirectDns: true, ownerGroupsInclude: 'java,202' } },
  { name: 'ipv6-dns-outbound-owner-groups-exclude', input: { enableIPv6: true, redirectDns: true, ownerGroupsExclude: '888,ftp' } },
  { name: 'outbound-ports-include', input: { outboundPorts: '32000,31000' } },
  {
    name: 'loopback-outbound-iprange',
    input: { outboundIpRanges: '127.1.2.3/32', redirectDns: true, dnsServers: ['127.0.0.53'], proxyGid: '1,2', proxyUid: '3,4' },
  },
  { name: 'basic-exclude-nic', input: { excludeInterfaces: 'not-istio-nic' } },
  { name: 'drop-invalid', input: { dropInvalid: true } },
  { name: 'host-ipv4-loopback-cidr', input: { hostIPv4LoopbackCidr: '127.0.0.1/8' } },
];

export const EXTRA_CASES: readonly GoldenCase[] = [
  // What Istio's injection template passes to istio-init (and our `meshpilot iptables` defaults for -d).
  {
    name: 'injection-defaults',
    input: { interceptionMode: 'REDIRECT', outboundIpRanges: '*', inboundPorts: '*', inboundPortsExclude: '15090,15021,15020' },
  },
  { name: 'custom-ports', input: { proxyPort: '16001', inboundCapturePort: '16006', inboundTunnelPort: '16008', inboundPorts: '*' } },
  { name: 'outbound-ports-exclude', input: { outboundIpRanges: '*', outboundPortsExclude: '3306,6379' } },
  {
    name: 'exclude-cidr-dual-stack',
    input: { outboundIpRanges: '*', outboundIpRangesExclude: '10.96.0.0/12,fd00::/108', enableIPv6: true },
  },
  { name: 'capture-all-dns', input: { outboundIpRanges: '*', redirectDns: true, captureAllDns: true, enableIPv6: true } },
  // The options test/e2e/capture-netns.test.ts sends real traffic through.
  {
    name: 'netns-e2e',
    input: {
      outboundIpRanges: '*',
      inboundPorts: '*',
      inboundPortsExclude: '15090,15021,15020',
      outboundIpRangesExclude: '10.250.1.2/32',
      outboundPortsExclude: '9000',
      redirectDns: true,
      captureAllDns: true,
      enableIPv6: true,
    },
  },
  { name: 'tproxy-custom-mark', input: { interceptionMode: 'TPROXY', inboundPorts: '*', tproxyMark: '1400', tproxyRouteTable: '140' } },
];

export const ALL_CASES: readonly GoldenCase[] = [...ISTIO_CASES, ...EXTRA_CASES];

export function caseInput(c: GoldenCase): CaptureInput {
  return { ...ISTIO_IPTABLES_DEFAULTS, ...c.input };
}
