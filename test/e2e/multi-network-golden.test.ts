/**
 * Multi-network EDS held whole to istiod's. The cluster state of testdata/multi-network/cluster/
 * (pods and WorkloadEntries in several networks, meshNetworks in the `istio` ConfigMap, gateway
 * Services, an AUTO_PASSTHROUGH Gateway) is applied to a real kube-apiserver; meshpilot runs in
 * cluster mode; raw SotW ADS clients connect as the proxies of test/support/multi-network/capture.ts
 * (sidecars in and out of networks, an east-west gateway, an ingress gateway with a requested network
 * view), exactly as scripts/capture-multi-network-golden.ts did against the real istiod, and every
 * ClusterLoadAssignment is compared with testdata/multi-network/istiod/eds.json leaf by leaf. What may
 * differ is listed with its reason in test/support/multi-network/differences.ts; nothing else is left out.
 *
 * MULTI_NETWORK_GOLDEN_TARGET=istiod (by hand; needs ../shared/istiod) runs the same test against the
 * real istiod: it must pass, which shows the capture and the comparison are sound.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import type { JsonObject, JsonValue } from '@bufbuild/protobuf';
import { startIstiodKube, type RunningIstiod } from '../../scripts/istiod-capture.js';
import { applyClusterState, loadClusterState } from '../support/ambient/cluster-state.js';
import { KUBE_SETUP_TIMEOUT_MS, kubeSkipReason, meshpilotServiceAccount, startKubeCluster, type KubeCluster } from '../support/kube.js';
import { endOfRunCheck, startMeshpilot, type Meshpilot } from '../support/meshpilot-process.js';
import {
  captureEndpoints,
  MULTI_NETWORK_CLUSTER_DIR,
  MULTI_NETWORK_GOLDEN,
  PROXIES,
  scenarioDigest,
} from '../support/multi-network/capture.js';
import { ACCEPTED, acceptedFor } from '../support/multi-network/differences.js';
import { tempDir, type TempDir } from '../support/temp-dir.js';
import { compareResources, type LeafDiff, type Resource } from '../scenarios/whole/leaves.js';

const TARGETS = ['meshpilot', 'istiod'] as const;
const target = process.env.MULTI_NETWORK_GOLDEN_TARGET ?? 'meshpilot';
if (!(TARGETS as readonly string[]).includes(target))
  throw new Error(`MULTI_NETWORK_GOLDEN_TARGET=${target}: expected one of ${TARGETS.join(', ')}`);

const skip = kubeSkipReason();

let cluster: KubeCluster | undefined;
let mp: Meshpilot | undefined;
let istiod: RunningIstiod | undefined;
let dir: TempDir | undefined;
let grpcAddr = '';

interface Golden {
  readonly source: { readonly scenarioSha256: string };
  readonly proxies: Readonly<Record<string, Readonly<Record<string, JsonValue>>>>;
}

function golden(): Golden {
  const doc = JSON.parse(readFileSync(MULTI_NETWORK_GOLDEN, 'utf8')) as Golden;
  assert.equal(
    doc.source.scenarioSha256,
    scenarioDigest(),
    'testdata/multi-network/istiod/eds.json was captured from another scenario: run npx tsx scripts/capture-multi-network-golden.ts',
  );
  return doc;
}

const resources = (clas: Readonly<Record<string, JsonValue>>): Resource[] =>
  Object.entries(clas).map(([name, json]) => ({ type: 'endpoint', name, json }));

const show = (d: LeafDiff): string =>
  `  ${d.name} ${d.path || '(whole ClusterLoadAssignment)'}: istiod ${d.istiod ?? 'absent'}, ${target} ${d.meshpilot ?? 'absent'}`;

describe(`multi-network EDS: ${target} against istiod's capture`, { skip }, () => {
  const used = new Set<string>();

  before(
    async () => {
      cluster = await startKubeCluster();
      await applyClusterState(cluster, loadClusterState(MULTI_NETWORK_CLUSTER_DIR));
      if (target === 'istiod') {
        istiod = await startIstiodKube(cluster.kubeconfigPath);
        grpcAddr = istiod.grpcAddr;
      } else {
        dir = tempDir('meshpilot-multi-network-golden-');
        const creds = await meshpilotServiceAccount(cluster, 'istio-system');
        mp = await startMeshpilot({
          configDir: dir.path,
          args: ['--kubeconfig', creds.kubeconfigPath],
          env: { POD_NAMESPACE: 'istio-system' },
          readyTimeoutMs: 60_000,
        });
        grpcAddr = mp.grpcAddr;
      }
    },
    { timeout: KUBE_SETUP_TIMEOUT_MS },
  );

  after(async () => {
    const check = endOfRunCheck(mp);
    await mp?.stop();
    await istiod?.stop();
    await dir?.remove();
    await cluster?.stop();
    check();
  });

  for (const proxy of Object.keys(PROXIES)) {
    it(`${proxy}: every ClusterLoadAssignment equals eds.json`, async () => {
      const expected = golden().proxies[proxy];
      assert.ok(expected, `eds.json has no proxy ${proxy}: recapture`);
      const got = await captureEndpoints(grpcAddr, PROXIES[proxy]!);
      const { diffs } = compareResources(resources(expected), resources(got as JsonObject));
      const unexplained = diffs.filter((d) => {
        const a = target === 'meshpilot' ? acceptedFor(proxy, d) : undefined;
        if (a) used.add(a.id);
        return a === undefined;
      });
      const logs = mp ? `\n--- meshpilot stderr tail ---\n${mp.tail(20)}` : '';
      assert.equal(
        unexplained.length,
        0,
        `${proxy}: ${unexplained.length} differences from istiod:\n${unexplained.map(show).join('\n')}${logs}`,
      );
    });
  }

  it('every accepted difference still explains one', { skip: target !== 'meshpilot' }, () => {
    const stale = ACCEPTED.filter((a) => !used.has(a.id)).map((a) => a.id);
    assert.deepEqual(
      stale,
      [],
      'these ACCEPTED entries match no difference any more: remove them from test/support/multi-network/differences.ts',
    );
  });
});
