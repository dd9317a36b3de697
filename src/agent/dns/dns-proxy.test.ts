import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { create } from '@bufbuild/protobuf';
import { NameTableSchema, type NameTable } from '../../gen/dns/proto/nds_pb.js';
import { createLogger } from '../../util/log.js';
import { queryDns, startUpstreamDns, type UpstreamDns } from '../../../test/support/dns/upstream-server.js';
import { startDnsProxy, type DnsProxy } from './dns-proxy.js';
import { LookupTable } from './lookup-table.js';
import { parseResolvConf } from './resolv-conf.js';
import {
  buildQuery,
  RCODE_FORMERR,
  RCODE_NOERROR,
  RCODE_NXDOMAIN,
  RCODE_SERVFAIL,
  readAnswers,
  TYPE_A,
  TYPE_AAAA,
  TYPE_CNAME,
} from './wire.js';

const log = createLogger({ level: 'error' });

const table = (): NameTable =>
  create(NameTableSchema, {
    table: {
      'reviews.default.svc.cluster.local': {
        ips: ['10.96.0.20', 'fd00::20'],
        registry: 'Kubernetes',
        shortname: 'reviews',
        namespace: 'default',
      },
      'mysql.db.svc.cluster.local': { ips: ['10.1.0.10', '10.1.0.11'], registry: 'Kubernetes', shortname: 'mysql', namespace: 'db' },
      'api.example.com': { ips: ['240.240.131.162'], registry: 'External' },
      '*.wild.example.com': { ips: ['192.0.2.50'], registry: 'External' },
      'bad.example.com': { ips: ['not-an-ip'], registry: 'External' },
    },
  });

const ctx = {
  proxyNamespace: 'default',
  proxyDomain: 'default.svc.cluster.local',
  searchDomains: ['default.svc.cluster.local', 'svc.cluster.local', 'cluster.local'],
};

describe('DNS lookup table', () => {
  const t = LookupTable.build(table(), ctx);
  const a = (name: string, type = TYPE_A): unknown => {
    const r = t.lookup(type, name);
    return r.found
      ? r.answers.map((x) => (x.type === TYPE_CNAME ? `${x.name} CNAME ${x.target}` : `${x.name} ${x.address}`)).sort()
      : 'not found';
  };

  it('answers a Kubernetes service by its FQDN, name.ns, name.ns.svc and, in its own namespace, its bare name', () => {
    for (const n of ['reviews.default.svc.cluster.local.', 'reviews.default.', 'reviews.default.svc.', 'reviews.'])
      assert.deepEqual(a(n), [`${n} 10.96.0.20`], n);
    assert.deepEqual(a('reviews.', TYPE_AAAA), ['reviews. fd00::20']);
    // Another namespace's service has no bare name here.
    assert.deepEqual(a('mysql.db.'), ['mysql.db. 10.1.0.10', 'mysql.db. 10.1.0.11']);
    assert.equal(a('mysql.'), 'not found');
  });

  it('answers the first search-domain expansion with a CNAME to the name (the query resolvers send first)', () => {
    assert.deepEqual(a('api.example.com.default.svc.cluster.local.'), [
      'api.example.com. 240.240.131.162',
      'api.example.com.default.svc.cluster.local. CNAME api.example.com.',
    ]);
    // A name already in the first search domain is not expanded again.
    assert.equal(a('reviews.default.svc.cluster.local.default.svc.cluster.local.'), 'not found');
  });

  it('answers names under a wildcard host with their own name; a known name without the asked family is found but empty', () => {
    assert.deepEqual(a('x.y.wild.example.com.'), ['x.y.wild.example.com. 192.0.2.50']);
    assert.deepEqual(a('api.example.com.', TYPE_AAAA), []);
    assert.equal(a('bad.example.com.'), 'not found', 'an entry without a usable address is left out');
    assert.equal(a('api.example.com.', 16), 'not found', 'TXT goes upstream');
  });
});

describe('DNS proxy over real sockets', () => {
  let upstream: UpstreamDns;
  let proxy: DnsProxy;
  let addr: { host: string; port: number };

  before(async () => {
    upstream = await startUpstreamDns('127.0.0.1', 0, { 'www.example.org': ['198.51.100.80'] });
    proxy = await startDnsProxy({
      address: '127.0.0.1:0',
      resolvConf: parseResolvConf(`nameserver 127.0.0.2\nsearch default.svc.cluster.local svc.cluster.local\n`),
      proxyNamespace: 'default',
      proxyDomain: 'default.svc.cluster.local',
      forwardTimeoutMs: 1000,
      forwardParallel: false,
      log,
    });
    addr = { host: '127.0.0.1', port: proxy.listening[0]!.port };
  });
  after(async () => {
    await proxy?.stop();
    await upstream?.stop();
  });

  it('answers SERVFAIL before the first name table, then from it, over UDP and TCP', async () => {
    const early = readAnswers(await queryDns(addr, buildQuery(1, 'reviews', TYPE_A)));
    assert.equal(early.header.rcode, RCODE_SERVFAIL);
    assert.equal(proxy.ready(), false);
    assert.match(proxy.notReadyReason() ?? '', /name table has not arrived/);
    proxy.updateNameTable(table());
    assert.equal(proxy.ready(), true);
    assert.equal(proxy.notReadyReason(), undefined);
    for (const protocol of ['udp', 'tcp'] as const) {
      const r = readAnswers(await queryDns(addr, buildQuery(2, 'Reviews', TYPE_A), protocol));
      assert.equal(r.header.rcode, RCODE_NOERROR, protocol);
      assert.equal(r.header.authoritative, true);
      assert.equal(r.header.id, 2);
      assert.deepEqual(r.answers, [{ name: 'reviews', type: TYPE_A, ttl: 30, address: '10.96.0.20' }]);
    }
  });

  it('forwards other names to the resolv.conf server and passes its answer back', async () => {
    proxy.updateNameTable(table());
    // resolv.conf names 127.0.0.2:53; the test's upstream listens elsewhere, so point a second proxy at it.
    const forwarding = await startDnsProxy({
      address: '127.0.0.1:0',
      resolvConf: { servers: [{ host: '127.0.0.1', port: upstream.port }], search: [] },
      proxyNamespace: 'default',
      proxyDomain: 'default.svc.cluster.local',
      forwardTimeoutMs: 1000,
      forwardParallel: false,
      log,
    });
    try {
      forwarding.updateNameTable(table());
      const at = { host: '127.0.0.1', port: forwarding.listening[0]!.port };
      for (const protocol of ['udp', 'tcp'] as const) {
        const r = readAnswers(await queryDns(at, buildQuery(3, 'www.example.org', TYPE_A), protocol));
        assert.equal(r.header.rcode, RCODE_NOERROR);
        assert.equal(r.header.authoritative, false);
        assert.deepEqual(r.answers, [{ name: 'www.example.org', type: TYPE_A, ttl: 60, address: '198.51.100.80' }]);
        const nx = readAnswers(await queryDns(at, buildQuery(4, 'nowhere.example.org', TYPE_A), protocol));
        assert.equal(nx.header.rcode, RCODE_NXDOMAIN);
      }
      assert.deepEqual(
        upstream.asked.map((q) => `${q.protocol} ${q.name}`),
        ['udp www.example.org', 'udp nowhere.example.org', 'tcp www.example.org', 'tcp nowhere.example.org'],
      );
      // A mesh name never reaches the upstream.
      await queryDns(at, buildQuery(5, 'api.example.com', TYPE_A));
      assert.equal(upstream.asked.length, 4);
    } finally {
      await forwarding.stop();
    }
  });

  it('answers SERVFAIL when no upstream answers', async () => {
    proxy.updateNameTable(table());
    const r = readAnswers(await queryDns(addr, buildQuery(6, 'www.example.org', TYPE_A), 'udp', 5000));
    assert.equal(r.header.rcode, RCODE_SERVFAIL);
  });

  it('survives garbage: short packets get nothing, bad queries FORMERR, and it keeps answering', async () => {
    proxy.updateNameTable(table());
    const bad = buildQuery(7, 'reviews', TYPE_A);
    bad.writeUInt16BE(3, 4); // three questions
    const formerr = readAnswers(await queryDns(addr, bad));
    assert.equal(formerr.header.rcode, RCODE_FORMERR);
    assert.equal(formerr.header.id, 7);
    await assert.rejects(queryDns(addr, Buffer.from([1, 2, 3]), 'udp', 300), /no UDP answer/);
    // A burst of random datagrams and TCP frames.
    const dgram = await import('node:dgram');
    const s = dgram.createSocket('udp4');
    for (let i = 0; i < 500; i++) s.send(randomBytes(1 + (i % 80)), addr.port, addr.host);
    await new Promise((r) => setTimeout(r, 200));
    s.close();
    const net = await import('node:net');
    await new Promise<void>((resolve) => {
      const c = net.connect(addr.port, addr.host, () => {
        c.end(Buffer.concat([Buffer.from([0, 5]), randomBytes(5), Buffer.from([0xff, 0xff]), randomBytes(100)]));
      });
      c.on('close', () => resolve());
      c.on('error', () => resolve());
      c.resume();
    });
    const ok = readAnswers(await queryDns(addr, buildQuery(8, 'reviews.default', TYPE_A), 'tcp'));
    assert.deepEqual(ok.answers, [{ name: 'reviews.default', type: TYPE_A, ttl: 30, address: '10.96.0.20' }]);
  });
});
