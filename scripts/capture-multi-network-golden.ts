/**
 * Captures what the real istiod serves as EDS in the multi-network scenario of
 * testdata/multi-network/cluster/, the oracle test/e2e/multi-network-golden.test.ts holds meshpilot to.
 *
 *   npx tsx scripts/capture-multi-network-golden.ts
 *
 * Steps: a fresh real kube-apiserver (../shared/kube/start-apiserver); Istio's CRDs; every object of
 * testdata/multi-network/cluster/*.yaml in file order (Pod and Service status through the status
 * subresource). Then the real istiod (../shared/istiod/run-kube), which reads meshNetworks from the
 * `istio` ConfigMap, and raw SotW ADS clients as the proxies of test/support/multi-network/capture.ts
 * (each: CDS and LDS wildcard, then EDS for every EDS cluster). Captured twice; the two must agree.
 * Output: testdata/multi-network/istiod/eds.json — per proxy, every ClusterLoadAssignment whole
 * (proto3 JSON), the API server's own port normalised.
 * Env: ISTIOD_RUN_KUBE overrides the run-kube script. CI does not run this (it needs istiod's build).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { applyClusterState, loadClusterState } from '../test/support/ambient/cluster-state.js';
import { startKubeCluster } from '../test/support/kube.js';
import { captureAll, MULTI_NETWORK_CLUSTER_DIR, MULTI_NETWORK_GOLDEN, scenarioDigest } from '../test/support/multi-network/capture.js';
import { ISTIOD_MODULE, PROXY_ISTIO_VERSION, startIstiodKube } from './istiod-capture.js';

async function main(): Promise<void> {
  const started = Date.now();
  const cluster = await startKubeCluster();
  try {
    await applyClusterState(cluster, loadClusterState(MULTI_NETWORK_CLUSTER_DIR));
    const istiod = await startIstiodKube(cluster.kubeconfigPath);
    try {
      // Ready means synced; give the network gateway handlers' push a moment to settle.
      await new Promise((r) => setTimeout(r, 2000));
      const proxies = await captureAll(istiod.grpcAddr);
      const again = await captureAll(istiod.grpcAddr);
      if (!isDeepStrictEqual(proxies, again)) throw new Error('two captures from the same istiod differ: the corpus would not be stable');
      mkdirSync(dirname(MULTI_NETWORK_GOLDEN), { recursive: true });
      const source = { istiod: ISTIOD_MODULE, ISTIO_VERSION: PROXY_ISTIO_VERSION, scenarioSha256: scenarioDigest() };
      writeFileSync(MULTI_NETWORK_GOLDEN, `${JSON.stringify({ source, proxies }, undefined, 2)}\n`);
      const counts = Object.entries(proxies).map(([p, clas]) => `${p}: ${Object.keys(clas).length}`);
      const errors = istiod.log.filter((l) => /\terror\t/.test(l) && !/leader|lease|istio-ca|webhook|injector/i.test(l));
      console.log(
        `ClusterLoadAssignments per proxy: ${counts.join(', ')} (${Date.now() - started} ms)` +
          (errors.length > 0 ? `\nistiod errors:\n  ${errors.slice(0, 10).join('\n  ')}` : ''),
      );
    } finally {
      await istiod.stop();
    }
  } finally {
    await cluster.stop();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
