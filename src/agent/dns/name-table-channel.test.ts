import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { anyPack } from '@bufbuild/protobuf/wkt';
import { NameTableSchema, type NameTable } from '../../gen/dns/proto/nds_pb.js';
import {
  DeltaDiscoveryRequestSchema,
  DeltaDiscoveryResponseSchema,
  DiscoveryRequestSchema,
  DiscoveryResponseSchema,
} from '../../gen/envoy/service/discovery/v3/discovery_pb.js';
import { TypeUrl } from '../../xds/type-urls.js';
import { silentLogger } from '../../util/log.js';
import { agentDnsSettings } from './dns-options.js';
import { nameTableChannel, peekString } from './name-table-channel.js';

const sotwRequest = (typeUrl: string): Buffer =>
  Buffer.from(
    toBinary(DiscoveryRequestSchema, create(DiscoveryRequestSchema, { typeUrl, node: { id: 'sidecar~1.2.3.4~a.b~b.svc.cluster.local' } })),
  );
const table = create(NameTableSchema, { table: { 'a.example.com': { ips: ['240.240.0.1'], registry: 'External' } } });

describe('the xDS side channel for the name table', () => {
  it('asks for NDS once per stream, right after the client first asks for listeners', () => {
    const tap = nameTableChannel(() => undefined, silentLogger).openStream(false);
    assert.deepEqual(tap.afterRequest(sotwRequest(TypeUrl.Cluster)), []);
    const [nds] = tap.afterRequest(sotwRequest(TypeUrl.Listener));
    assert.ok(nds);
    const req = fromBinary(DiscoveryRequestSchema, nds);
    assert.equal(req.typeUrl, TypeUrl.NameTable);
    assert.equal(req.node, undefined, 'the stream already carried the node');
    assert.deepEqual(tap.afterRequest(sotwRequest(TypeUrl.Listener)), []);
    const delta = nameTableChannel(() => undefined, silentLogger).openStream(true);
    const ldsDelta = Buffer.from(toBinary(DeltaDiscoveryRequestSchema, create(DeltaDiscoveryRequestSchema, { typeUrl: TypeUrl.Listener })));
    assert.equal(fromBinary(DeltaDiscoveryRequestSchema, delta.afterRequest(ldsDelta)[0]!).typeUrl, TypeUrl.NameTable);
  });

  it('takes NameTable responses (SotW and Delta), ACKs them, and lets every other response through', () => {
    const got: NameTable[] = [];
    const channel = nameTableChannel((t) => got.push(t), silentLogger);
    const sotw = channel.openStream(false);
    const resp = create(DiscoveryResponseSchema, {
      typeUrl: TypeUrl.NameTable,
      versionInfo: 'v1',
      nonce: 'n1',
      resources: [anyPack(NameTableSchema, table)],
    });
    const ack = fromBinary(DiscoveryRequestSchema, sotw.consume(Buffer.from(toBinary(DiscoveryResponseSchema, resp)))!);
    assert.deepEqual([ack.typeUrl, ack.versionInfo, ack.responseNonce, ack.errorDetail], [TypeUrl.NameTable, 'v1', 'n1', undefined]);
    assert.deepEqual(got[0]?.table['a.example.com']?.ips, ['240.240.0.1']);
    const cds = create(DiscoveryResponseSchema, { typeUrl: TypeUrl.Cluster, nonce: 'n2' });
    assert.equal(sotw.consume(Buffer.from(toBinary(DiscoveryResponseSchema, cds))), undefined);

    const delta = channel.openStream(true);
    const dresp = create(DeltaDiscoveryResponseSchema, {
      typeUrl: TypeUrl.NameTable,
      nonce: 'd1',
      resources: [{ name: '', version: 'x', resource: anyPack(NameTableSchema, table) }],
    });
    const dack = fromBinary(DeltaDiscoveryRequestSchema, delta.consume(Buffer.from(toBinary(DeltaDiscoveryResponseSchema, dresp)))!);
    assert.deepEqual([dack.typeUrl, dack.responseNonce, dack.errorDetail], [TypeUrl.NameTable, 'd1', undefined]);
    assert.equal(got.length, 2);
  });

  it('NACKs a table it cannot decode, and keeps the last good one', () => {
    const got: NameTable[] = [];
    const tap = nameTableChannel((t) => got.push(t), silentLogger).openStream(false);
    const bad = create(DiscoveryResponseSchema, {
      typeUrl: TypeUrl.NameTable,
      nonce: 'n9',
      resources: [{ typeUrl: `type.googleapis.com/${NameTableSchema.typeName}`, value: Uint8Array.from([0x0a, 0xff, 0xff]) }],
    });
    const nack = fromBinary(DiscoveryRequestSchema, tap.consume(Buffer.from(toBinary(DiscoveryResponseSchema, bad)))!);
    assert.equal(nack.responseNonce, 'n9');
    assert.equal(nack.errorDetail?.code, 13);
    assert.match(nack.errorDetail?.message ?? '', /cannot decode the NameTable/);
    assert.equal(got.length, 0);
  });

  it('reads a type URL without decoding the rest, and nothing from garbage', () => {
    assert.equal(peekString(sotwRequest(TypeUrl.Listener), 4), TypeUrl.Listener);
    assert.equal(peekString(Uint8Array.from([0xff, 0xff, 0xff]), 4), '');
  });
});

describe('DNS proxy settings', () => {
  const opts = { proxyType: 'sidecar' as const, namespace: 'shop', domain: 'cluster.local', extraMetadata: { DNS_CAPTURE: 'true' } };

  it('is on for a sidecar with DNS capture, or any proxy with ENABLE_DNS_SERVER, and off otherwise', () => {
    assert.deepEqual(agentDnsSettings(opts, {}, false), {
      address: 'localhost:15053',
      resolvConfFile: '/etc/resolv.conf',
      forwardParallel: false,
      forwardTimeoutMs: 5000,
      proxyNamespace: 'shop',
      proxyDomain: 'shop.svc.cluster.local',
    });
    assert.equal(agentDnsSettings({ ...opts, proxyType: 'router' }, {}, false), undefined);
    assert.ok(agentDnsSettings({ ...opts, proxyType: 'router', extraMetadata: { ENABLE_DNS_SERVER: 'true' } }, {}, false));
    assert.equal(agentDnsSettings({ ...opts, extraMetadata: {} }, {}, false), undefined);
  });

  it('reads DNS_PROXY_ADDR, DNS_FORWARD_PARALLEL and DNS_FORWARD_TIMEOUT; port 53 needs root', () => {
    const s = agentDnsSettings(opts, { DNS_PROXY_ADDR: '127.0.0.1:5353', DNS_FORWARD_PARALLEL: 'true', DNS_FORWARD_TIMEOUT: '2s' }, false);
    assert.deepEqual([s?.address, s?.forwardParallel, s?.forwardTimeoutMs], ['127.0.0.1:5353', true, 2000]);
    assert.equal(agentDnsSettings(opts, { DNS_PROXY_ADDR: '0.0.0.0:53' }, false)?.address, 'localhost:15053');
    assert.equal(agentDnsSettings(opts, { DNS_PROXY_ADDR: '0.0.0.0:53' }, true)?.address, '0.0.0.0:53');
    assert.throws(() => agentDnsSettings(opts, { DNS_FORWARD_TIMEOUT: 'soon' }, false), /DNS_FORWARD_TIMEOUT: "soon" is not a duration/);
    assert.throws(() => agentDnsSettings({ ...opts, extraMetadata: { DNS_CAPTURE: 'maybe' } }, {}, false), /ISTIO_META_DNS_CAPTURE/);
  });
});
