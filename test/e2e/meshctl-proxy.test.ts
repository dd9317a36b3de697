/**
 * meshctl proxy-status / proxy-config against a running meshpilot (bookinfo): raw sidecar-like ADS
 * clients connect, and the tables printed over the xDS debug types must match the resources those
 * clients received; a client that has not ACKed its last push shows STALE.
 */
import assert from 'node:assert/strict';
import { access, cp, mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Command } from 'commander';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';
import type { Cluster } from '../../src/gen/envoy/config/cluster/v3/cluster_pb.js';
import type { ClusterLoadAssignment } from '../../src/gen/envoy/config/endpoint/v3/endpoint_pb.js';
import type { Listener } from '../../src/gen/envoy/config/listener/v3/listener_pb.js';
import type { RouteConfiguration } from '../../src/gen/envoy/config/route/v3/route_pb.js';
import type { CliIO } from '../../src/meshctl/io.js';
import { formatClusters } from '../../src/meshctl/proxy/cluster-format.js';
import { formatEndpoints } from '../../src/meshctl/proxy/endpoint-format.js';
import { fetchProxyConfig, proxyStatus, registerProxyCommands, renderProxyConfig } from '../../src/meshctl/proxy/index.js';
import { formatListeners } from '../../src/meshctl/proxy/listener-format.js';
import { formatRoutes } from '../../src/meshctl/proxy/route-format.js';
import { proxyIdOf } from '../../src/meshctl/proxy/status-format.js';
import { BOOKINFO_DIR, BOOKINFO_PROXIES } from '../scenarios/bookinfo-fixture.js';
import { startMeshpilot, type Meshpilot } from '../support/meshpilot-process.js';
import { freePorts } from '../support/ports.js';
import { AdsStream, type AdsNode } from '../support/raw-ads-client.js';
import { rdsNames } from '../support/scenario.js';
import { tempDir, type TempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';
import { callWhoami, closeXdsChannels, proxylessNode, useXdsBootstrap } from '../support/xds-client.js';
import { clusterEdsName, decodeResources, SCHEMA_BY_TYPE, TYPE } from '../support/xds-resources.js';

let dir: TempDir | undefined;
let mp: Meshpilot | undefined;
const streams: AdsStream[] = [];
/** What the productpage client received and ACKed. */
const received = {
  listeners: [] as Listener[],
  clusters: [] as Cluster[],
  routes: [] as RouteConfiguration[],
  endpoints: [] as ClusterLoadAssignment[],
};

function nodeOf(name: string): AdsNode {
  const spec = BOOKINFO_PROXIES[name];
  assert.ok(spec, name);
  const ns = spec.id.split('~')[3]?.split('.')[0] ?? '';
  return {
    id: spec.id,
    metadata: {
      NAMESPACE: ns,
      LABELS: spec.labels ?? {},
      CLUSTER_ID: 'Kubernetes',
      ISTIO_VERSION: '1.28.0',
      INTERCEPTION_MODE: 'REDIRECT',
    },
  };
}

function open(node: AdsNode): AdsStream {
  assert.ok(mp);
  const s = AdsStream.open(mp.grpcAddr, { node });
  streams.push(s);
  return s;
}

/** Rows as header → cell, cut at the header's column offsets (works with empty cells). */
/** `SYNCED (3s)` → `SYNCED`: the age depends on timing, the status does not. */
const withoutAge = (cell: string): string => cell.replace(/ \(\S+\)$/, '');

function byColumn(text: string): Record<string, string>[] {
  const [header = '', ...lines] = text.trimEnd().split('\n');
  const starts = [...header.matchAll(/\S+(?: \S+)*/g)].map((m) => ({ name: m[0], at: m.index }));
  return lines.map((l) =>
    Object.fromEntries(starts.map((c, i) => [c.name, withoutAge(l.slice(c.at, starts[i + 1]?.at ?? l.length).trim())])),
  );
}

/** Data rows split on runs of 2+ spaces (tables padded by 5). */
const rows = (text: string): string[][] =>
  text
    .trimEnd()
    .split('\n')
    .slice(1)
    .map((l) => l.trimEnd().split(/ {2,}/));

const PRODUCTPAGE = BOOKINFO_PROXIES.productpage?.id ?? '';
const REVIEWS = BOOKINFO_PROXIES['reviews-v1']?.id ?? '';

describe('meshctl proxy-status / proxy-config (bookinfo, live meshpilot)', () => {
  before(async () => {
    dir = tempDir();
    await cp(join(BOOKINFO_DIR, 'config'), dir.path, { recursive: true });
    mp = await startMeshpilot({ configDir: dir.path });

    // productpage syncs as Envoy does and ACKs everything.
    const s = open(nodeOf('productpage'));
    s.subscribe(TYPE.LDS, []);
    const lds = await s.next(TYPE.LDS);
    s.ack(lds.resp);
    received.listeners = decodeResources(lds.resp, SCHEMA_BY_TYPE[TYPE.LDS]);
    s.subscribe(TYPE.CDS, []);
    const cds = await s.next(TYPE.CDS);
    s.ack(cds.resp);
    received.clusters = decodeResources(cds.resp, SCHEMA_BY_TYPE[TYPE.CDS]);
    s.subscribe(TYPE.RDS, [...rdsNames(received.listeners)]);
    const rds = await s.next(TYPE.RDS);
    s.ack(rds.resp);
    received.routes = decodeResources(rds.resp, SCHEMA_BY_TYPE[TYPE.RDS]);
    s.subscribe(
      TYPE.EDS,
      received.clusters.flatMap((c) => clusterEdsName(c) ?? []),
    );
    const eds = await s.next(TYPE.EDS);
    s.ack(eds.resp);
    received.endpoints = decodeResources(eds.resp, SCHEMA_BY_TYPE[TYPE.EDS]);

    // reviews-v1 takes its listeners and never ACKs them.
    const r = open(nodeOf('reviews-v1'));
    r.subscribe(TYPE.LDS, []);
    await r.next(TYPE.LDS);
  });

  after(async () => {
    closeXdsChannels();
    for (const s of streams) s.close();
    await mp?.stop();
    await dir?.remove();
  });

  it('proxy-status: a row per connected proxy with istioctl columns; the debug client itself is not listed', async () => {
    assert.ok(mp);
    const text = await proxyStatus({ addresses: [mp.grpcAddr] });
    const lines = text.trimEnd().split('\n');
    assert.deepEqual(lines[0]?.split(/ {2,}/), ['NAME', 'CLUSTER', 'ISTIOD', 'VERSION', 'SUBSCRIBED TYPES']);
    // NAME is istiod's proxy ID, `<pod>.<namespace>`.
    const byId = new Map(rows(text).map((r) => [r[0], r]));
    assert.deepEqual([...byId.keys()].sort(), [proxyIdOf(PRODUCTPAGE), proxyIdOf(REVIEWS)].sort(), text);
    // productpage watches the four core types (syncz lists what a proxy watches, as istiod's StatusGen).
    assert.deepEqual(byId.get(proxyIdOf(PRODUCTPAGE)), [
      proxyIdOf(PRODUCTPAGE),
      'Kubernetes',
      mp.grpcAddr,
      '1.28.0',
      '4 (CDS,LDS,EDS,RDS)',
    ]);
    // -o json: the syncz DiscoveryResponse as proto JSON, ClientConfigs typed, without this client.
    const json = JSON.parse(await proxyStatus({ addresses: [mp.grpcAddr], output: 'json' })) as {
      resources: { '@type': string; node: { id: string } }[];
    };
    assert.deepEqual(
      json.resources.map((r) => [r['@type'], r.node.id]).sort(),
      [
        ['type.googleapis.com/envoy.service.status.v3.ClientConfig', PRODUCTPAGE],
        ['type.googleapis.com/envoy.service.status.v3.ClientConfig', REVIEWS],
      ].sort(),
    );
  });

  it('proxy-status -v: SYNCED for the ACKed types, STALE for the un-ACKed push, IGNORED for types not watched', async () => {
    assert.ok(mp);
    const text = await proxyStatus({ addresses: [mp.grpcAddr], verbose: true });
    assert.deepEqual(text.split('\n')[0]?.split(/ {2,}/), ['NAME', 'CLUSTER', 'CDS', 'ECDS', 'EDS', 'LDS', 'RDS', 'ISTIOD', 'VERSION']);
    const byId = new Map(rows(text).map((r) => [r[0], r.slice(2, 7).map(withoutAge)]));
    assert.deepEqual(byId.get(proxyIdOf(PRODUCTPAGE)), ['SYNCED', 'IGNORED', 'SYNCED', 'SYNCED', 'SYNCED'], text);
    // reviews only subscribed LDS: the other types are not in its ClientConfig, which istioctl shows as IGNORED.
    assert.deepEqual(byId.get(proxyIdOf(REVIEWS)), ['IGNORED', 'IGNORED', 'IGNORED', 'STALE', 'IGNORED'], text);
    const one = await proxyStatus({ addresses: [mp.grpcAddr], proxy: 'reviews-v1-1' });
    assert.deepEqual(
      rows(one).map((r) => r[0]),
      [proxyIdOf(REVIEWS)],
    );
  });

  it('proxy-config cluster|listener|route|endpoint: the tables of exactly the resources the sidecar received', async () => {
    assert.ok(mp);
    const data = await fetchProxyConfig({ address: mp.grpcAddr }, 'productpage-v1-1.bookinfo');
    assert.equal(renderProxyConfig('cluster', data), formatClusters(received.clusters));
    assert.equal(renderProxyConfig('listener', data), formatListeners(received.listeners));
    assert.equal(renderProxyConfig('route', data), formatRoutes(received.routes));
    assert.equal(renderProxyConfig('endpoint', data), formatEndpoints(received.endpoints));
    assert.ok(
      rows(renderProxyConfig('cluster', data)).some(
        (r) => r.join('|') === 'reviews.bookinfo.svc.cluster.local|9080|v2|outbound|EDS|reviews.bookinfo',
      ),
    );
    const json = JSON.parse(renderProxyConfig('cluster', data, { output: 'json', cluster: { fqdn: 'reviews', subset: 'v2' } })) as {
      name: string;
    }[];
    assert.deepEqual(
      json.map((c) => c.name),
      ['outbound|9080|v2|reviews.bookinfo.svc.cluster.local'],
    );
    assert.equal(renderProxyConfig('secret', data), 'No active or warming secrets found.\n');
    const all = renderProxyConfig('all', data);
    assert.ok(
      all.includes('cluster/outbound|9080|v2|reviews.bookinfo.svc.cluster.local') &&
        all.includes('route/9080') &&
        all.includes('listener/0.0.0.0_9080'),
      all,
    );
  });

  it('the registered commander commands print the same tables and fail in one line for an unknown proxy', async () => {
    assert.ok(mp);
    let out = '';
    const io: CliIO = { stdout: { write: (s: string) => (out += s) }, stderr: { write: () => true }, env: {}, cwd: process.cwd() };
    const program = new Command().exitOverride();
    registerProxyCommands(program, io);
    await program.parseAsync(['proxy-config', 'route', 'productpage-v1-1.bookinfo', '--xds-address', mp.grpcAddr, '--name', '9080'], {
      from: 'user',
    });
    assert.equal(out, formatRoutes(received.routes, { name: '9080' }));
    out = '';
    await program.parseAsync(['proxy-status', '--xds-address', mp.grpcAddr], { from: 'user' });
    assert.equal(rows(out).length, 2, out);
    await assert.rejects(
      fetchProxyConfig({ address: mp.grpcAddr }, 'nobody.nowhere'),
      /proxy "nobody.nowhere" is not connected to 127\.0\.0\.1:\d+/,
    );
  });

  it('a real grpc-js-xds client: listed once it has ACKed, and its listener table names the service it dialled', async () => {
    assert.ok(mp);
    const node = proxylessNode('grpc-client-1', 'bookinfo', '10.1.0.99');
    useXdsBootstrap(mp.grpcAddr, node);
    // No backend answers at the bookinfo endpoint IPs; the call only has to make the client subscribe.
    await callWhoami('xds:///reviews.bookinfo.svc.cluster.local:9080', { deadlineMs: 1500 });
    const row = await waitFor(
      async () => {
        const text = await proxyStatus({ addresses: [mp?.grpcAddr ?? ''], verbose: true, proxy: 'grpc-client-1' });
        // Its node has no CLUSTER_ID nor ISTIO_VERSION: the control plane's cluster and the client's user agent.
        const r = byColumn(text)[0];
        return r && ['EDS', 'LDS', 'RDS'].every((t) => r[t] === 'SYNCED') ? r : undefined;
      },
      { description: 'the grpc-js-xds client ACKed EDS, LDS and RDS', timeoutMs: 15_000 },
    );
    // CDS is whatever the client last answered: ERROR exactly when meshpilot logged its NACK of CDS.
    const nacked = mp.logs().some((l) => l.json?.msg === 'NACK' && l.json.proxy === node.id && l.json.type === 'CDS');
    assert.deepEqual(row, {
      NAME: 'grpc-client-1.bookinfo',
      CLUSTER: 'Kubernetes',
      CDS: nacked ? 'ERROR' : 'SYNCED',
      ECDS: 'IGNORED',
      EDS: 'SYNCED',
      LDS: 'SYNCED',
      RDS: 'SYNCED',
      ISTIOD: mp.grpcAddr,
      VERSION: row.VERSION,
    });
    assert.match(row.VERSION ?? '', /^gRPC Node Pure JS\/\d+\.\d+\.\d+$/);
    const data = await fetchProxyConfig({ address: mp.grpcAddr }, node.id);
    const listeners = renderProxyConfig('listener', data, { output: 'json' });
    assert.deepEqual(
      (JSON.parse(listeners) as { name: string }[]).map((l) => l.name),
      ['reviews.bookinfo.svc.cluster.local:9080'],
    );
  });
});

describe('meshctl proxy-status over TLS (secure xDS port, bearer token)', () => {
  let tdir: TempDir | undefined;
  let smp: Meshpilot | undefined;
  let secureAddr = '';
  let token = '';
  let certDir = '';

  before(async () => {
    tdir = tempDir();
    await cp(join(BOOKINFO_DIR, 'config'), join(tdir.path, 'config'), { recursive: true });
    const keys = await generateKeyPair('ES256');
    const jwk = { ...(await exportJWK(keys.publicKey)), kid: 'k', alg: 'ES256', use: 'sig' };
    const issuer = 'https://issuer.meshctl.test';
    const [port] = (await freePorts(1)) as [number];
    secureAddr = `127.0.0.1:${port}`;
    const caDir = join(tdir.path, 'ca');
    smp = await startMeshpilot({
      configDir: join(tdir.path, 'config'),
      env: { JWT_RULE: JSON.stringify({ issuer, audiences: ['istio-ca'], jwks: { keys: [jwk] } }) },
      args: ['--secureGRPCAddr', secureAddr, '--caDir', caDir],
    });
    await waitFor(
      () =>
        access(join(caDir, 'root-cert.pem')).then(
          () => true,
          () => false,
        ),
      { description: 'the CA root', timeoutMs: 20_000 },
    );
    certDir = join(tdir.path, 'meshctl-certs');
    await mkdir(certDir);
    await cp(join(caDir, 'root-cert.pem'), join(certDir, 'root-cert.pem'));
    // The debug client connects as a proxy in istio-system, so the token is an istio-system service account.
    token = await new SignJWT({})
      .setProtectedHeader({ alg: 'ES256', kid: 'k' })
      .setIssuer(issuer)
      .setAudience('istio-ca')
      .setSubject('system:serviceaccount:istio-system:meshctl')
      .setIssuedAt()
      .setExpirationTime('1h')
      .sign(keys.privateKey);
    const s = AdsStream.open(smp.grpcAddr, { node: nodeOf('details') });
    streams.push(s);
    s.subscribe(TYPE.LDS, []);
    s.ack((await s.next(TYPE.LDS)).resp);
  });

  after(async () => {
    await smp?.stop();
    await tdir?.remove();
  });

  it('--cert-dir + --token reach the secure port and print the same rows', async () => {
    let out = '';
    const io: CliIO = { stdout: { write: (x: string) => (out += x) }, stderr: { write: () => true }, env: {}, cwd: process.cwd() };
    const program = new Command().exitOverride();
    registerProxyCommands(program, io);
    await program.parseAsync(['proxy-status', '-v', '--xds-address', secureAddr, '--cert-dir', certDir, '--token', token], {
      from: 'user',
    });
    const r = byColumn(out);
    assert.deepEqual(
      r.map((x) => [x.NAME, x.LDS, x.ISTIOD]),
      [[proxyIdOf(BOOKINFO_PROXIES.details?.id ?? ''), 'SYNCED', secureAddr]],
      out,
    );
    // Without a token the secure port turns the stream down; the error is one line naming the address.
    const rootCertPem = await readFile(join(certDir, 'root-cert.pem'), 'utf8');
    await assert.rejects(proxyStatus({ addresses: [secureAddr], connection: { tls: { rootCertPem }, timeoutMs: 5000 } }), (e: Error) => {
      assert.match(e.message, /^xDS request to 127\.0\.0\.1:\d+ failed: .+/);
      assert.ok(!e.message.includes('\n'), e.message);
      return true;
    });
  });
});
