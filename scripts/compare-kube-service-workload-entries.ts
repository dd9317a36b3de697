/**
 * Captures what the real istiod serves as EDS when Kubernetes Services select WorkloadEntries
 * (testdata/kube-service-workload-entries/cluster/), the oracle
 * test/e2e/kube-service-workload-entries.test.ts holds meshpilot to.
 *
 *   npx tsx scripts/compare-kube-service-workload-entries.ts
 *
 * Steps: a fresh real kube-apiserver; Istio's CRDs; every object of the state in file order (Pod
 * and WorkloadEntry status through the status subresource). Then the real istiod
 * (../shared/istiod/run-kube) and a raw SotW ADS sidecar in `shop` (CDS, LDS wildcard, then EDS for
 * every EDS cluster), captured twice (the two must agree). Output:
 * testdata/kube-service-workload-entries/istiod/eds.json — the ClusterLoadAssignments of the `vm`
 * Services, whole (proto3 JSON). Then meshpilot, from this checkout, on the same server: its EDS is
 * printed against istiod's (exit 1 when they differ).
 * Env: ISTIOD_RUN_KUBE overrides the run-kube script. CI does not run this (it needs istiod's build).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { applyClusterState, loadClusterState } from '../test/support/ambient/cluster-state.js';
import { startKubeCluster } from '../test/support/kube.js';
import {
  captureVmEndpoints,
  KUBE_WLE_CLUSTER_DIR,
  KUBE_WLE_GOLDEN,
  kubeWleDigest,
} from '../test/support/kube-service-workload-entries/capture.js';
import { startMeshpilot } from '../test/support/meshpilot-process.js';
import { tempDir } from '../test/support/temp-dir.js';
import { ISTIOD_MODULE, PROXY_ISTIO_VERSION, startIstiodKube } from './istiod-capture.js';

async function main(): Promise<void> {
  const cluster = await startKubeCluster();
  try {
    await applyClusterState(cluster, loadClusterState(KUBE_WLE_CLUSTER_DIR));
    const istiod = await startIstiodKube(cluster.kubeconfigPath);
    let fromIstiod;
    try {
      await new Promise((r) => setTimeout(r, 2000));
      fromIstiod = await captureVmEndpoints(istiod.grpcAddr);
      const again = await captureVmEndpoints(istiod.grpcAddr);
      if (!isDeepStrictEqual(fromIstiod, again))
        throw new Error('two captures from the same istiod differ: the golden would not be stable');
    } finally {
      await istiod.stop();
    }
    mkdirSync(dirname(KUBE_WLE_GOLDEN), { recursive: true });
    const source = { istiod: ISTIOD_MODULE, ISTIO_VERSION: PROXY_ISTIO_VERSION, scenarioSha256: kubeWleDigest() };
    writeFileSync(KUBE_WLE_GOLDEN, `${JSON.stringify({ source, endpoints: fromIstiod }, undefined, 2)}\n`);

    const dir = tempDir('meshpilot-compare-');
    const mp = await startMeshpilot({
      configDir: dir.path,
      args: ['--kubeconfig', cluster.kubeconfigPath],
      env: { POD_NAMESPACE: 'istio-system' },
      readyTimeoutMs: 60_000,
    });
    let fromMeshpilot;
    try {
      fromMeshpilot = await captureVmEndpoints(mp.grpcAddr);
    } finally {
      await mp.stop();
      await dir.remove();
    }
    if (isDeepStrictEqual(fromIstiod, fromMeshpilot)) console.log(`wrote ${KUBE_WLE_GOLDEN}; meshpilot's EDS is identical`);
    else {
      console.log(JSON.stringify({ istiod: fromIstiod, meshpilot: fromMeshpilot }, undefined, 2));
      console.error(`wrote ${KUBE_WLE_GOLDEN}; meshpilot's EDS differs`);
      process.exitCode = 1;
    }
  } finally {
    await cluster.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
