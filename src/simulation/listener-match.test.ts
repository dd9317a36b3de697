import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FilterChainMatch_ConnectionSourceType } from '../gen/envoy/config/listener/v3/listener_components_pb.js';
import { formatResult, simulate, type SimRequest } from './index.js';
import { chain, cluster, config, listener, tcpProxy, type ChainInit, type MatchInit } from './test-fixtures.js';

const STATIC = (ip: string, port: number) => ({ type: 'STATIC' as const, endpoints: [{ ip, port }] });

// Every chain forwards to a cluster named after it, so the cluster tells which chain matched.
const tcpChain = (name: string, match?: MatchInit): ChainInit => chain(name, [tcpProxy(name)], match);
const clustersFor = (...names: string[]) => names.map((n) => cluster(n, STATIC('10.9.9.9', 9)));

const virtualOutbound = (fallback: 'PassthroughCluster' | 'BlackHoleCluster') =>
  listener('virtualOutbound', '0.0.0.0', 15001, {
    useOriginalDst: true,
    chains: [
      tcpChain('virtualOutbound-blackhole', { destinationPort: 15001 }),
      chain('virtualOutbound-catchall-tcp', [tcpProxy(fallback)]),
    ],
  });

const outboundMesh = (fallback: 'PassthroughCluster' | 'BlackHoleCluster') =>
  config({
    listeners: [
      virtualOutbound(fallback),
      listener('10.0.0.12_9000', '10.0.0.12', 9000, { chains: [tcpChain('vip-9000')] }),
      listener('0.0.0.0_9000', '0.0.0.0', 9000, { chains: [tcpChain('wild-9000')] }),
    ],
    clusters: [
      ...clustersFor('vip-9000', 'wild-9000', 'virtualOutbound-blackhole'),
      cluster('PassthroughCluster', { type: 'ORIGINAL_DST' }),
      cluster('BlackHoleCluster', { type: 'STATIC' }),
    ],
  });

const tcp = (address: string, port: number, extra: Partial<SimRequest> = {}): SimRequest => ({
  address,
  port,
  protocol: 'tcp',
  callMode: 'outbound',
  ...extra,
});

describe('listener selection', () => {
  it('hands captured traffic to the exact address listener before the wildcard one', () => {
    const r = simulate(outboundMesh('PassthroughCluster'), tcp('10.0.0.12', 9000));
    assert.equal(r.listener, '10.0.0.12_9000', formatResult(r));
    assert.equal(r.cluster, 'vip-9000');
  });

  it('falls back to 0.0.0.0:<port> for other addresses', () => {
    const r = simulate(outboundMesh('PassthroughCluster'), tcp('10.0.0.99', 9000));
    assert.equal(r.listener, '0.0.0.0_9000', formatResult(r));
  });

  it('keeps a connection without a listener on virtualOutbound: passthrough to the original destination', () => {
    const r = simulate(outboundMesh('PassthroughCluster'), tcp('93.184.216.34', 443));
    assert.equal(r.listener, 'virtualOutbound');
    assert.equal(r.filterChain, 'virtualOutbound-catchall-tcp');
    assert.equal(r.cluster, 'PassthroughCluster');
    assert.equal(r.endpoint, '93.184.216.34:443');
    assert.equal(r.error, undefined);
  });

  it('or drops it into the blackhole under REGISTRY_ONLY', () => {
    const r = simulate(outboundMesh('BlackHoleCluster'), tcp('93.184.216.34', 443));
    assert.equal(r.cluster, 'BlackHoleCluster');
    assert.equal(r.error, 'blackhole');
    assert.equal(r.status, 503);
  });

  it('matches virtualOutbound itself for its own port (the loop guard chain)', () => {
    const r = simulate(outboundMesh('PassthroughCluster'), tcp('10.0.0.12', 15001));
    assert.equal(r.filterChain, 'virtualOutbound-blackhole', formatResult(r));
  });

  it('does not hand off without use_original_dst', () => {
    const c = outboundMesh('PassthroughCluster');
    const noHandOff = config({
      ...c,
      listeners: [listener('virtualOutbound', '0.0.0.0', 15001, { chains: [tcpChain('own')] }), ...c.listeners.slice(1)],
    });
    assert.equal(simulate(noHandOff, tcp('10.0.0.12', 9000)).filterChain, 'own');
  });

  it('gateways take the listener bound on listenerPort, with no capture fallback', () => {
    const c = config({ listeners: [listener('0.0.0.0_8080', '0.0.0.0', 8080, { chains: [tcpChain('gw')] })], clusters: clustersFor('gw') });
    assert.equal(simulate(c, { address: '1.2.3.4', port: 80, listenerPort: 8080, protocol: 'tcp' }).filterChain, 'gw');
    const miss = simulate(c, { address: '1.2.3.4', port: 80, callMode: 'gateway', protocol: 'tcp' });
    assert.equal(miss.listener, undefined);
    assert.match(miss.error ?? '', /no listener/);
  });

  it('inbound traffic lands on virtualInbound whatever the port', () => {
    const c = config({
      listeners: [
        listener('virtualInbound', '0.0.0.0', 15006, {
          chains: [tcpChain('inbound|9000||', { destinationPort: 9000 }), tcpChain('catchall')],
        }),
        listener('0.0.0.0_9000', '0.0.0.0', 9000, { chains: [tcpChain('wild-9000')] }),
      ],
      clusters: clustersFor('inbound|9000||', 'catchall', 'wild-9000'),
    });
    assert.equal(simulate(c, tcp('10.1.1.1', 9000, { callMode: 'inbound' })).filterChain, 'inbound|9000||');
    assert.equal(simulate(c, tcp('10.1.1.1', 7777, { callMode: 'inbound' })).filterChain, 'catchall');
  });
});

/** One listener on 15006 with the given chains; traffic arrives as inbound. */
function sieve(chains: ChainInit[], opts: { defaultChain?: ChainInit; inspectors?: ('tls' | 'http')[] } = {}) {
  const names = chains.map((c) => c.name ?? '');
  if (opts.defaultChain) names.push(opts.defaultChain.name ?? '');
  const c = config({
    listeners: [listener('virtualInbound', '0.0.0.0', 15006, { chains, ...opts, inspectors: opts.inspectors ?? ['tls', 'http'] })],
    clusters: clustersFor(...names),
  });
  return (req: Partial<SimRequest>) => {
    const r = simulate(c, { address: '10.0.0.5', port: 8080, protocol: 'tcp', callMode: 'inbound', ...req });
    return r.filterChain ?? r.error;
  };
}

describe('filter chain match', () => {
  it('prefers a matching destination_port over chains without one', () => {
    const m = sieve([tcpChain('any'), tcpChain('p8080', { destinationPort: 8080 }), tcpChain('p9090', { destinationPort: 9090 })]);
    assert.equal(m({ port: 8080 }), 'p8080');
    assert.equal(m({ port: 7070 }), 'any');
  });

  it('takes the longest destination prefix range, a catch-all chain only when none contains the IP', () => {
    const m = sieve([
      tcpChain('catchall'),
      tcpChain('wide', { prefixRanges: [{ addressPrefix: '10.0.0.0', prefixLen: 8 }] }),
      tcpChain('narrow', {
        prefixRanges: [
          { addressPrefix: '10.0.0.0', prefixLen: 24 },
          { addressPrefix: '192.168.0.0', prefixLen: 16 },
        ],
      }),
      tcpChain('v6', { prefixRanges: [{ addressPrefix: '2001:db8::', prefixLen: 32 }] }),
    ]);
    assert.equal(m({ address: '10.0.0.5' }), 'narrow');
    assert.equal(m({ address: '10.7.0.5' }), 'wide');
    assert.equal(m({ address: '192.168.3.3' }), 'narrow');
    assert.equal(m({ address: '172.16.0.1' }), 'catchall');
    assert.equal(m({ address: '2001:db8::1' }), 'v6');
    assert.equal(m({ address: '2001:db9::1' }), 'catchall');
  });

  it('matches server names exactly, then by the longest wildcard suffix, then chains without names', () => {
    const m = sieve([
      tcpChain('none'),
      tcpChain('exact', { serverNames: ['api.example.com'] }),
      tcpChain('wild', { serverNames: ['*.example.com'] }),
      tcpChain('wilder', { serverNames: ['*.com'] }),
    ]);
    assert.equal(m({ tls: 'tls', sni: 'api.example.com' }), 'exact');
    assert.equal(m({ tls: 'tls', sni: 'www.example.com' }), 'wild');
    assert.equal(m({ tls: 'tls', sni: 'a.b.example.com' }), 'wild');
    assert.equal(m({ tls: 'tls', sni: 'example.com' }), 'wilder');
    assert.equal(m({ tls: 'tls', sni: 'example.org' }), 'none');
    assert.equal(m({ tls: 'none' }), 'none');
  });

  it('separates TLS from plaintext by transport protocol and ALPN', () => {
    const m = sieve([
      tcpChain('mtls', { transportProtocol: 'tls', applicationProtocols: ['istio-peer-exchange', 'istio'] }),
      tcpChain('tls', { transportProtocol: 'tls' }),
      tcpChain('http', { transportProtocol: 'raw_buffer', applicationProtocols: ['http/1.1', 'h2c'] }),
      tcpChain('raw', { transportProtocol: 'raw_buffer' }),
    ]);
    assert.equal(m({ tls: 'mtls' }), 'mtls');
    assert.equal(m({ tls: 'tls' }), 'tls');
    assert.equal(m({ tls: 'tls', alpn: ['h2', 'istio'] }), 'mtls');
    assert.equal(m({ protocol: 'http' }), 'http');
    assert.equal(m({ protocol: 'http2' }), 'http');
    assert.equal(m({ protocol: 'tcp' }), 'raw');
  });

  it('walks the offered ALPNs in order', () => {
    const m = sieve([tcpChain('h2', { applicationProtocols: ['h2'] }), tcpChain('h1', { applicationProtocols: ['http/1.1'] })]);
    assert.equal(m({ tls: 'tls', alpn: ['h2', 'http/1.1'] }), 'h2');
    assert.equal(m({ tls: 'tls', alpn: ['http/1.1', 'h2'] }), 'h1');
  });

  it('sees neither TLS nor ALPN without the inspectors', () => {
    const chains = [
      tcpChain('tls', { transportProtocol: 'tls' }),
      tcpChain('http', { applicationProtocols: ['http/1.1'] }),
      tcpChain('raw', { transportProtocol: 'raw_buffer' }),
    ];
    assert.equal(sieve(chains, { inspectors: [] })({ tls: 'mtls' }), 'raw');
    assert.equal(sieve(chains, { inspectors: ['tls'] })({ protocol: 'http' }), 'raw');
    assert.equal(sieve(chains, { inspectors: ['tls', 'http'] })({ protocol: 'http' }), 'raw'); // transport decides first
  });

  it('an earlier, more specific criterion shadows the catch-all even when a later one fails', () => {
    const m = sieve([tcpChain('p8080-tls', { destinationPort: 8080, transportProtocol: 'tls' }), tcpChain('catchall')]);
    assert.equal(m({ tls: 'tls' }), 'p8080-tls');
    assert.equal(m({ tls: 'none' }), 'no matching filter chain');
    const withDefault = sieve([tcpChain('p8080-tls', { destinationPort: 8080, transportProtocol: 'tls' })], {
      defaultChain: tcpChain('default'),
    });
    assert.equal(withDefault({ tls: 'none' }), 'default');
  });

  it('matches source type, source prefix ranges and source ports', () => {
    const m = sieve([
      tcpChain('local', { sourceType: FilterChainMatch_ConnectionSourceType.SAME_IP_OR_LOOPBACK }),
      tcpChain('external', {
        sourceType: FilterChainMatch_ConnectionSourceType.EXTERNAL,
        sourcePrefixRanges: [{ addressPrefix: '10.8.0.0', prefixLen: 16 }],
      }),
      tcpChain('external-any', { sourceType: FilterChainMatch_ConnectionSourceType.EXTERNAL }),
    ]);
    assert.equal(m({ callerIp: '127.0.0.6' }), 'local');
    assert.equal(m({ callerIp: '10.0.0.5' }), 'local'); // same IP as the destination
    assert.equal(m({ callerIp: '10.8.1.1' }), 'external');
    assert.equal(m({ callerIp: '10.9.1.1' }), 'external-any');
    const ports = sieve([tcpChain('p1234', { sourcePorts: [1234] }), tcpChain('anyport')]);
    assert.equal(ports({ callerPort: 1234 }), 'p1234');
    assert.equal(ports({ callerPort: 4321 }), 'anyport');
  });

  it('reports chains Envoy would reject as duplicates', () => {
    assert.match(sieve([tcpChain('a'), tcpChain('b')])({}) ?? '', /multiple filter chains matched: a, b/);
  });

  it('names unnamed chains by position', () => {
    const c = config({ listeners: [listener('l', '0.0.0.0', 80, { chains: [{ filters: [tcpProxy('x')] }] })], clusters: clustersFor('x') });
    assert.equal(simulate(c, { address: '1.1.1.1', port: 80, protocol: 'tcp', listenerPort: 80 }).filterChain, 'filter_chains[0]');
  });
});
