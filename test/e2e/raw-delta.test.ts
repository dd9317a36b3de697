/**
 * Delta ADS driven by hand against the real server process. Subscribe,
 * unsubscribe, wildcard, removal, a reconnect with initial_resource_versions that receives only
 * what changed, and a NACK followed by a fixed config.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ClusterSchema } from '../../src/gen/envoy/config/cluster/v3/cluster_pb.js';
import { RouteConfigurationSchema } from '../../src/gen/envoy/config/route/v3/route_pb.js';
import type { Resource } from '../../src/gen/envoy/service/discovery/v3/discovery_pb.js';
import { levelOf, startMeshpilot, type Meshpilot } from '../support/meshpilot-process.js';
import { dest, destinationRule, serviceEntry, virtualService, workloadEntry } from '../support/mesh-fixtures.js';
import { freePorts } from '../support/ports.js';
import { proxylessAdsNode, type AdsNode } from '../support/raw-ads-client.js';
import { DeltaStream, type DeltaReceived } from '../support/raw-delta-client.js';
import { tempDir, type TempDir } from '../support/temp-dir.js';
import { quietWindow, waitFor } from '../support/wait.js';
import { TYPE, unpack } from '../support/xds-resources.js';
import { removeFile, writeYaml } from '../support/yaml-files.js';

const HOST = 'echo.default.svc.cluster.local';
const OTHER_HOST = 'other.default.svc.cluster.local';
const GONE_HOST = 'gone.default.svc.cluster.local';
const LISTENER = `${HOST}:8080`;
const OTHER_LISTENER = `${OTHER_HOST}:8080`;
const GONE_LISTENER = `${GONE_HOST}:8080`;
const QUIET_MS = 1500;

let dir: TempDir | undefined;
let mp: Meshpilot | undefined;
let ports: number[] = [];
const streams: DeltaStream[] = [];

function open(node: AdsNode): DeltaStream {
  assert.ok(mp);
  const s = DeltaStream.open(mp.grpcAddr, { node });
  streams.push(s);
  return s;
}

const names = (r: DeltaReceived): string[] => r.resp.resources.map((x) => x.name).sort();
const summary = (r: DeltaReceived): string =>
  `${r.resp.typeUrl} +[${names(r).join(',')}] -[${r.resp.removedResources.join(',')}] nonce=${r.resp.nonce}`;

async function assertQuiet(s: DeltaStream, why: string): Promise<void> {
  s.drain();
  await quietWindow(QUIET_MS);
  assert.deepEqual(s.drain().map(summary), [], `${why}: expected no response within ${QUIET_MS} ms\n${mp?.tail(20) ?? ''}`);
  assert.ok(s.isOpen(), `stream ended: ${JSON.stringify(s.end)}`);
}

function routesOf(res: Resource): string[] {
  assert.ok(res.resource, `resource ${res.name} without a body`);
  const rc = unpack(res.resource, RouteConfigurationSchema);
  return rc.virtualHosts.flatMap((vh) => vh.routes.map((r) => JSON.stringify(r.match?.headers.map((h) => h.name) ?? [])));
}

/** Rewrites the echo VirtualService and waits until the server has pushed the new config. */
async function editEchoRoutes(headerMatch: string | undefined): Promise<void> {
  assert.ok(mp && dir);
  const since = mp.mark();
  const http = headerMatch
    ? [{ match: [{ headers: { [headerMatch]: { exact: 'yes' } } }], route: [dest(HOST, 'v1')] }, { route: [dest(HOST, 'v1')] }]
    : [{ route: [dest(HOST, 'v1')] }];
  await writeYaml(dir.path, 'echo-vs.yaml', [virtualService('echo-routes', { hosts: [HOST], http })]);
  await mp.waitForLog((l) => l.json?.msg === 'push', { since, description: 'a push after the VirtualService edit' });
}

describe('raw Delta ADS', () => {
  before(async () => {
    ports = await freePorts(3);
    dir = tempDir('meshpilot-raw-delta-');
    await writeYaml(dir.path, 'mesh.yaml', [
      serviceEntry('echo', { host: HOST, selector: { app: 'echo' } }),
      serviceEntry('other', { host: OTHER_HOST, selector: { app: 'other' } }),
      workloadEntry('echo-v1', { port: ports[0] ?? 0, labels: { app: 'echo', version: 'v1' } }),
      workloadEntry('other-v1', { port: ports[1] ?? 0, labels: { app: 'other', version: 'v1' } }),
      destinationRule('echo', { host: HOST, subsets: { v1: { version: 'v1' } } }),
    ]);
    await writeYaml(dir.path, 'gone.yaml', [
      serviceEntry('gone', { host: GONE_HOST, selector: { app: 'gone' } }),
      workloadEntry('gone-v1', { port: ports[2] ?? 0, labels: { app: 'gone' } }),
    ]);
    await writeYaml(dir.path, 'echo-vs.yaml', [virtualService('echo-routes', { hosts: [HOST], http: [{ route: [dest(HOST, 'v1')] }] })]);
    mp = await startMeshpilot({ configDir: dir.path });
  });

  after(async () => {
    for (const s of streams) s.close();
    const crashed = mp !== undefined && !mp.alive();
    const tail = mp?.tail(30);
    await mp?.stop();
    await dir?.remove();
    if (crashed) assert.fail(`meshpilot exited during the tests\n${tail}`);
  });

  it('subscribe returns the named Listener with a per-resource version; subscribing more sends only the new one; ACKs are silent', async () => {
    const s = open(proxylessAdsNode('delta-sub'));
    s.subscribe(TYPE.LDS, [LISTENER]);
    const first = await s.next(TYPE.LDS);
    assert.deepEqual(names(first), [LISTENER]);
    assert.ok(first.resp.resources[0]?.version, 'per-resource version');
    assert.notEqual(first.resp.systemVersionInfo, '', 'system_version_info = push version');
    s.ack(first.resp);
    await assertQuiet(s, 'after the ACK');
    s.subscribe(TYPE.LDS, [OTHER_LISTENER]);
    const second = await s.next(TYPE.LDS);
    assert.deepEqual(names(second), [OTHER_LISTENER], 'only the newly subscribed Listener');
    s.ack(second.resp);
    await assertQuiet(s, 'after the second ACK');
  });

  it('unsubscribe gets no response, and no removal is sent for the unsubscribed name later', async () => {
    const s = open(proxylessAdsNode('delta-unsub'));
    s.subscribe(TYPE.RDS, [LISTENER, OTHER_LISTENER]);
    const r = await s.next(TYPE.RDS);
    assert.deepEqual(names(r), [LISTENER, OTHER_LISTENER].sort());
    s.ack(r.resp);
    s.unsubscribe(TYPE.RDS, [LISTENER]);
    await assertQuiet(s, 'after unsubscribe');
    await editEchoRoutes('x-unsub');
    await assertQuiet(s, 'after editing the unsubscribed route');
  });

  it('wildcard CDS: a sidecar-type node is answered as a wildcard watch; a proxyless wildcard gets none, a named one gets its clusters', async () => {
    const sidecar = open({ id: `sidecar~127.0.0.1~delta-envoy.default~default.svc.cluster.local`, metadata: { NAMESPACE: 'default' } });
    sidecar.send({ typeUrl: TYPE.CDS });
    const sc = await sidecar.next(TYPE.CDS);
    assert.ok(sidecar.isOpen());
    sidecar.ack(sc.resp);

    const proxyless = open(proxylessAdsNode('delta-wild'));
    proxyless.send({ typeUrl: TYPE.CDS, subscribe: ['*'] });
    const wild = await proxyless.next(TYPE.CDS);
    assert.deepEqual(names(wild), [], 'wildcard CDS from proxyless gets none (istiod)');
    proxyless.ack(wild.resp);

    const named = open(proxylessAdsNode('delta-named'));
    const cluster = `outbound|8080|v1|${HOST}`;
    named.subscribe(TYPE.CDS, [cluster]);
    const r = await named.next(TYPE.CDS);
    assert.deepEqual(names(r), [cluster]);
    const res = r.resp.resources[0];
    assert.ok(res?.resource);
    assert.equal(unpack(res.resource, ClusterSchema).name, cluster);
  });

  it('deleting a ServiceEntry file sends removed_resources for its Listener and Cluster', async () => {
    assert.ok(dir);
    const s = open(proxylessAdsNode('delta-removal'));
    const cluster = `outbound|8080||${GONE_HOST}`;
    s.subscribe(TYPE.LDS, [GONE_LISTENER]);
    const lds = await s.next(TYPE.LDS);
    assert.deepEqual(names(lds), [GONE_LISTENER]);
    s.ack(lds.resp);
    s.subscribe(TYPE.CDS, [cluster]);
    const cds = await s.next(TYPE.CDS);
    assert.deepEqual(names(cds), [cluster]);
    s.ack(cds.resp);

    await removeFile(dir.path, 'gone.yaml');
    await waitFor(() => !(GONE_LISTENER in s.holdings(TYPE.LDS)) && !(cluster in s.holdings(TYPE.CDS)), {
      description: 'Listener and Cluster removed',
    });
    const got = s.drain();
    const removed = got.flatMap((r) => r.resp.removedResources).sort();
    assert.deepEqual(removed, [GONE_LISTENER, cluster].sort(), got.map(summary).join('\n'));
    assert.ok(
      got.every((r) => r.resp.resources.length === 0),
      'removal only',
    );
    for (const r of got) s.ack(r.resp);
    await assertQuiet(s, 'after ACKing the removals');
  });

  it('a reconnect with initial_resource_versions gets only the changed RouteConfiguration and removals of what is gone', async () => {
    const node = proxylessAdsNode('delta-reconnect');
    const s1 = open(node);
    s1.subscribe(TYPE.RDS, [LISTENER, OTHER_LISTENER]);
    const r1 = await s1.next(TYPE.RDS);
    assert.deepEqual(names(r1), [LISTENER, OTHER_LISTENER].sort());
    s1.ack(r1.resp);
    const held = s1.holdings(TYPE.RDS);
    s1.close();
    await s1.ended;

    await editEchoRoutes('x-reconnect');

    const s2 = open(node);
    s2.send({
      typeUrl: TYPE.RDS,
      subscribe: [LISTENER, OTHER_LISTENER, GONE_LISTENER],
      initialVersions: { ...held, [GONE_LISTENER]: 'old' },
    });
    const r2 = await s2.next(TYPE.RDS);
    assert.deepEqual(names(r2), [LISTENER], `only the edited route comes back: ${summary(r2)}`);
    assert.notEqual(r2.resp.resources[0]?.version, held[LISTENER]);
    assert.deepEqual(routesOf(r2.resp.resources[0] as Resource)[0], JSON.stringify(['x-reconnect']));
    assert.deepEqual(r2.resp.removedResources, [GONE_LISTENER], 'held but no longer existing → removed');
    s2.ack(r2.resp);
    await assertQuiet(s2, 'after ACKing the reconnect response');
  });

  it('a NACK is logged at warn (proxy, type, nonce, error) and not re-pushed; the fixed config is then sent', async () => {
    assert.ok(mp);
    const s = open(proxylessAdsNode('delta-nack'));
    s.subscribe(TYPE.RDS, [LISTENER]);
    const r = await s.next(TYPE.RDS);
    const since = mp.mark();
    const detail = 'raw-delta test: route rejected on purpose';
    s.nack(r.resp, detail);
    const line = await mp.waitForLog((l) => levelOf(l) === 'warn' && l.raw.includes(detail), { since, description: 'the NACK warn line' });
    assert.equal(line.json?.nonce, r.resp.nonce);
    assert.equal(line.json?.type, 'RDS');
    assert.ok(String(line.json?.proxy).includes('delta-nack'), line.raw);
    await assertQuiet(s, 'after the NACK');

    await editEchoRoutes('x-fixed');
    const fixed = await s.next(TYPE.RDS);
    assert.deepEqual(names(fixed), [LISTENER]);
    assert.notEqual(fixed.resp.resources[0]?.version, r.resp.resources[0]?.version);
    assert.deepEqual(routesOf(fixed.resp.resources[0] as Resource)[0], JSON.stringify(['x-fixed']));
    s.ack(fixed.resp);
    await assertQuiet(s, 'after ACKing the fixed config');
  });
});
