/**
 * A WorkloadEntry change is an EDS-only push. Against the real server process:
 * only the streams that watch the changed host's endpoints get a response, it is EDS alone and
 * carries only that host's ClusterLoadAssignments (SotW and Delta); a stream watching another
 * host hears nothing.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ClusterLoadAssignmentSchema } from '../../src/gen/envoy/config/endpoint/v3/endpoint_pb.js';
import { startMeshpilot, type Meshpilot } from '../support/meshpilot-process.js';
import { serviceEntry, workloadEntry } from '../support/mesh-fixtures.js';
import { AdsStream, proxylessAdsNode } from '../support/raw-ads-client.js';
import { DeltaStream } from '../support/raw-delta-client.js';
import { tempDir, type TempDir } from '../support/temp-dir.js';
import { quietWindow } from '../support/wait.js';
import { decodeResources, endpointAddresses, TYPE, unpack } from '../support/xds-resources.js';
import { writeYaml } from '../support/yaml-files.js';

const ECHO = 'echo.default.svc.cluster.local';
const OTHER = 'other.default.svc.cluster.local';
const ECHO_CLA = `outbound|8080||${ECHO}`;
const OTHER_CLA = `outbound|8080||${OTHER}`;
const QUIET_MS = 1200;

const mesh = (echoPort: number): ReturnType<typeof serviceEntry>[] => [
  serviceEntry('echo', { host: ECHO, selector: { app: 'echo' } }),
  serviceEntry('other', { host: OTHER, selector: { app: 'other' } }),
  workloadEntry('echo-v1', { address: '10.0.0.1', port: echoPort, labels: { app: 'echo' } }),
  workloadEntry('other-v1', { address: '10.0.1.1', port: 7000, labels: { app: 'other' } }),
];

describe('EDS-only pushes', () => {
  let dir: TempDir | undefined;
  let mp: Meshpilot | undefined;
  const closers: Array<{ close(): void }> = [];

  before(async () => {
    dir = tempDir('meshpilot-eds-push-');
    await writeYaml(dir.path, 'mesh.yaml', mesh(7001));
    mp = await startMeshpilot({ configDir: dir.path });
  });

  after(async () => {
    for (const c of closers) c.close();
    await mp?.stop();
    await dir?.remove();
  });

  it('a WorkloadEntry edit sends only the changed ClusterLoadAssignment, only to its watchers', async () => {
    assert.ok(mp && dir);
    const both = AdsStream.open(mp.grpcAddr, { node: proxylessAdsNode('eds-both') });
    const otherOnly = AdsStream.open(mp.grpcAddr, { node: proxylessAdsNode('eds-other') });
    const delta = DeltaStream.open(mp.grpcAddr, { node: proxylessAdsNode('eds-delta') });
    closers.push(both, otherOnly, delta);
    both.subscribe(TYPE.EDS, [ECHO_CLA, OTHER_CLA]);
    otherOnly.subscribe(TYPE.EDS, [OTHER_CLA]);
    delta.send({ typeUrl: TYPE.EDS, subscribe: [ECHO_CLA, OTHER_CLA] });
    const first = await both.next(TYPE.EDS);
    assert.deepEqual(
      decodeResources(first.resp, ClusterLoadAssignmentSchema)
        .map((c) => c.clusterName)
        .sort(),
      [ECHO_CLA, OTHER_CLA],
    );
    both.ack(first.resp);
    otherOnly.ack((await otherOnly.next(TYPE.EDS)).resp);
    const deltaFirst = await delta.next(TYPE.EDS);
    assert.equal(deltaFirst.resp.resources.length, 2);
    delta.ack(deltaFirst.resp);
    await quietWindow(300);
    both.drain();
    otherOnly.drain();
    delta.drain();

    const since = mp.mark();
    await writeYaml(dir.path, 'mesh.yaml', mesh(7002));
    const push = await mp.waitForLog((l) => l.json?.msg === 'push', { since, description: 'the push of the WorkloadEntry edit' });
    assert.equal(push.json?.full, false, 'a WorkloadEntry-only change is an EDS push');

    const got = await both.next();
    assert.equal(got.resp.typeUrl, TYPE.EDS);
    const clas = decodeResources(got.resp, ClusterLoadAssignmentSchema);
    assert.deepEqual(
      clas.map((c) => c.clusterName),
      [ECHO_CLA],
      'only the changed host is sent (SotW EDS need not repeat the rest)',
    );
    assert.deepEqual(endpointAddresses(clas[0]!), ['10.0.0.1:7002']);
    both.ack(got.resp);

    const d = await delta.next();
    assert.equal(d.resp.typeUrl, TYPE.EDS);
    assert.deepEqual(
      d.resp.resources.map((r) => r.name),
      [ECHO_CLA],
    );
    assert.ok(d.resp.resources[0]?.resource);
    assert.deepEqual(endpointAddresses(unpack(d.resp.resources[0].resource, ClusterLoadAssignmentSchema)), ['10.0.0.1:7002']);
    delta.ack(d.resp);

    await quietWindow(QUIET_MS);
    assert.deepEqual(
      both.drain().map((r) => r.resp.typeUrl),
      [],
      'nothing else for the watcher',
    );
    assert.deepEqual(
      delta.drain().map((r) => r.resp.typeUrl),
      [],
      'nothing else for the Delta watcher',
    );
    assert.deepEqual(
      otherOnly.drain().map((r) => r.resp.typeUrl),
      [],
      'a stream watching another host hears nothing',
    );

    // A full push that leaves every ClusterLoadAssignment as it is sends no EDS, although the
    // EDS-only push left the held list in another order than a full generation gives.
    const since2 = mp.mark();
    await writeYaml(dir.path, 'dr.yaml', [
      {
        apiVersion: 'networking.istio.io/v1',
        kind: 'DestinationRule',
        metadata: { name: 'echo', namespace: 'default' },
        spec: { host: ECHO, trafficPolicy: { loadBalancer: { simple: 'ROUND_ROBIN' } } },
      },
    ]);
    const full = await mp.waitForLog((l) => l.json?.msg === 'push', { since: since2, description: 'the push of the DestinationRule' });
    assert.equal(full.json?.full, true);
    await quietWindow(QUIET_MS);
    assert.deepEqual(
      both.drain().map((r) => r.resp.typeUrl),
      [],
      'unchanged endpoints are not sent again',
    );
    assert.deepEqual(
      delta.drain().map((r) => r.resp.typeUrl),
      [],
      'nor on Delta',
    );
  });
});
