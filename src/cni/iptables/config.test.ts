import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ISTIO_IPTABLES_DEFAULTS, resolveCaptureConfig, type CaptureInput } from './config.js';
import { parseCidr, parseIp } from './values.js';

const resolve = (input: Partial<CaptureInput>, labels = {}) => resolveCaptureConfig({ ...ISTIO_IPTABLES_DEFAULTS, ...input }, labels);

describe('capture config validation', () => {
  const cases: Array<[string, Partial<CaptureInput>, RegExp]> = [
    [
      'bad CIDR',
      { outboundIpRangesExclude: '10.0.0.0/8,10.0.0.0/33' },
      /-x\/--istio-service-exclude-cidr value "10\.0\.0\.0\/8,10\.0\.0\.0\/33".*prefix length must be 0-32/,
    ],
    ['CIDR without length', { outboundIpRanges: '10.0.0.1' }, /-i\/--istio-service-cidr .*missing \/prefix-length/],
    ['not an address', { outboundIpRanges: '10.0.0.256/8' }, /"10\.0\.0\.256\/8" is not a CIDR/],
    ['leading-zero octet', { outboundIpRanges: '010.0.0.0/8' }, /is not a CIDR/],
    ['port > 65535', { inboundPorts: '80,65536' }, /-b\/--istio-inbound-ports value "80,65536": port 65536 is out of range 1-65535/],
    ['port 0', { proxyPort: '0' }, /-p\/--envoy-port .*out of range/],
    ['non-numeric port', { outboundPortsExclude: 'http' }, /-o\/--istio-local-outbound-ports-exclude .*"http" is not a port number/],
    ['unknown mode', { interceptionMode: 'NAT' }, /-m\/--istio-inbound-interception-mode value "NAT": the mode must be REDIRECT or TPROXY/],
    ['lower-case mode', { interceptionMode: 'tproxy' }, /must be REDIRECT or TPROXY/],
    ['wildcard exclude', { outboundIpRangesExclude: '*' }, /-x\/--istio-service-exclude-cidr .*"\*" is not allowed/],
    ['bad interface', { excludeInterfaces: 'eth0,bad/if' }, /-c\/--istio-exclude-interfaces .*invalid characters/],
    ['long interface', { rerouteVirtualInterfaces: 'averyveryverylongname' }, /longer than 15/],
    ['reserved route table', { tproxyRouteTable: '254' }, /reserved by the kernel/],
    ['non-loopback host CIDR', { hostIPv4LoopbackCidr: '10.0.0.1/32' }, /ISTIO_OUTBOUND_IPV4_LOOPBACK_CIDR .*loopback/],
    ['empty uid', { proxyUid: '' }, /-u\/--proxy-uid .*at least one uid/],
    ['bad DNS server', { dnsServers: ['nameserver'] }, /DNS servers .*not an IP address/],
  ];
  for (const [name, input, want] of cases) {
    it(`rejects ${name}`, () => {
      assert.throws(
        () => resolve(input),
        (err: Error) => {
          assert.match(err.message, want);
          assert.equal((err as { code?: string }).code, 'INVALID_ARGUMENT');
          return true;
        },
      );
    });
  }

  it('names the option as the caller labels it (env, annotation)', () => {
    assert.throws(
      () => resolve({ outboundIpRanges: 'x' }, { outboundIpRanges: 'traffic.sidecar.istio.io/includeOutboundIPRanges' }),
      /invalid traffic\.sidecar\.istio\.io\/includeOutboundIPRanges value "x"/,
    );
  });

  it('defaults: gid follows uid, empty mode is REDIRECT, lists tolerate blanks and trailing commas', () => {
    const c = resolve({ proxyUid: '3,4', inboundPorts: ' 80, 443,', interceptionMode: '' });
    assert.deepEqual(c.proxyGids, ['3', '4']);
    assert.equal(c.interceptionMode, 'REDIRECT');
    assert.deepEqual(c.inboundPorts, [80, 443]);
    assert.deepEqual(resolve({ inboundPorts: '*' }).inboundPorts, '*');
    assert.deepEqual(resolve({}).ownerGroups, { except: true, values: [] });
    assert.deepEqual(resolve({ ownerGroupsInclude: 'a,1' }).ownerGroups, { except: false, values: ['a', '1'] });
  });

  it('splits DNS servers by family in canonical form', () => {
    const c = resolve({ dnsServers: ['10.96.0.10', 'FD00:0::A'] });
    assert.deepEqual(c.dnsServersV4, ['10.96.0.10']);
    assert.deepEqual(c.dnsServersV6, ['fd00::a']);
  });
});

describe('address parsing', () => {
  it('prints IPv6 as Go netip does (RFC 5952, mapped IPv4 dotted)', () => {
    const text = (s: string) => {
      const r = parseIp(s);
      assert.ok(r.ok, s);
      return r.value.text;
    };
    assert.equal(text('2001:0DB8:0000:0000:0000:0000:0000:0001'), '2001:db8::1');
    assert.equal(text('2001:db8:0:1:0:0:0:1'), '2001:db8:0:1::1');
    assert.equal(text('2001:db8:0:0:1:0:0:1'), '2001:db8::1:0:0:1');
    assert.equal(text('2001:db8:1:1:1:1:0:1'), '2001:db8:1:1:1:1:0:1');
    assert.equal(text('::ffff:10.0.0.1'), '::ffff:10.0.0.1');
    assert.equal(text('::'), '::');
    assert.equal(text('::1'), '::1');
    assert.ok(!parseIp('1::2::3').ok);
    assert.ok(!parseIp('fe80::1%eth0').ok);
    assert.ok(!parseIp('1:2:3:4:5:6:7:8:9').ok);
  });

  it('keeps the CIDR address unmasked (as istio-iptables prints it) and flags loopback', () => {
    const r = parseCidr('127.0.0.1/8');
    assert.ok(r.ok);
    assert.deepEqual(r.value, { text: '127.0.0.1/8', family: 4, loopback: true });
    const v6 = parseCidr('::1/128');
    assert.ok(v6.ok && v6.value.loopback && v6.value.family === 6);
  });
});
