/**
 * Captures what the real istiod serves as EDS in the multi-network scenarios of
 * test/support/multi-network/capture.ts, the oracle test/e2e/multi-network-golden.test.ts holds meshpilot to.
 *
 *   npx tsx scripts/capture-multi-network-golden.ts [one-cluster] [two-clusters]   (default: both)
 *
 * Steps: a fresh real kube-apiserver per cluster of the scenario (../shared/kube/start-apiserver);
 * Istio's CRDs; every object of the cluster's testdata folder in file order (Pod and Service status
 * through the status subresource); for each remote cluster an istio/multiCluster Secret in the
 * primary (test/support/multi-network/clusters.ts). Then the real istiod (../shared/istiod/run-kube)
 * against the primary with CLUSTER_ID set to its id — it reads meshNetworks from the `istio`
 * ConfigMap and the remote clusters from the Secrets — and raw SotW ADS clients as the scenario's
 * proxies (each: CDS and LDS wildcard, then EDS for every EDS cluster). Captured twice; the two must
 * agree. Output: the scenario's golden (testdata/multi-network/istiod/eds.json,
 * testdata/multi-network/two-clusters/istiod-eds.json) — per proxy, every ClusterLoadAssignment whole
 * (proto3 JSON), the API server's own port normalised. A scenario that names listener proxies
 * (two-clusters: each cluster's sidecar) also gets their Listeners and RouteConfigurations whole
 * (testdata/multi-network/two-clusters/istiod-lds.json). A scenario with proxyless gRPC clients
 * (one-cluster) also gets the ClusterLoadAssignments they ask for by name
 * (testdata/multi-network/istiod/grpc-eds.json).
 * Env: ISTIOD_RUN_KUBE overrides the run-kube script. CI does not run this (it needs istiod's build).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import {
  captureAll,
  captureAllProxyless,
  captureListeners,
  proxylessDigest,
  SCENARIOS,
  scenarioDigest,
} from '../test/support/multi-network/capture.js';
import { startScenarioClusters } from '../test/support/multi-network/clusters.js';
import { ISTIOD_MODULE, PROXY_ISTIO_VERSION, runScenarios, startIstiodKube } from './istiod-capture.js';

async function captureScenario(name: string): Promise<void> {
  const scenario = SCENARIOS[name]!;
  const started = Date.now();
  const clusters = await startScenarioClusters(scenario);
  try {
    const istiod = await startIstiodKube(clusters.primary.kubeconfigPath, { CLUSTER_ID: scenario.clusters[0].id });
    try {
      // Ready means synced (remote clusters included); give the network gateway handlers' push a moment to settle.
      await new Promise((r) => setTimeout(r, 2000));
      const proxies = await captureAll(istiod.grpcAddr, scenario.proxies);
      const again = await captureAll(istiod.grpcAddr, scenario.proxies);
      if (!isDeepStrictEqual(proxies, again)) throw new Error('two captures from the same istiod differ: the corpus would not be stable');
      mkdirSync(dirname(scenario.golden), { recursive: true });
      const source = { istiod: ISTIOD_MODULE, ISTIO_VERSION: PROXY_ISTIO_VERSION, scenarioSha256: scenarioDigest(scenario) };
      writeFileSync(scenario.golden, `${JSON.stringify({ source, proxies }, undefined, 2)}\n`);
      if (scenario.listeners) {
        const lds: Record<string, unknown> = {};
        for (const proxy of scenario.listeners.proxies) {
          const spec = scenario.proxies[proxy]!;
          lds[proxy] = await captureListeners(istiod.grpcAddr, spec);
          if (!isDeepStrictEqual(lds[proxy], await captureListeners(istiod.grpcAddr, spec)))
            throw new Error(`${proxy}: two captures of the listeners differ: the corpus would not be stable`);
        }
        writeFileSync(scenario.listeners.golden, `${JSON.stringify({ source, proxies: lds }, undefined, 2)}\n`);
      }
      if (scenario.proxyless) {
        const clients = scenario.proxyless.clients;
        const got = await captureAllProxyless(istiod.grpcAddr, clients);
        if (!isDeepStrictEqual(got, await captureAllProxyless(istiod.grpcAddr, clients)))
          throw new Error('two captures of the proxyless clients differ: the corpus would not be stable');
        const grpcSource = { ...source, scenarioSha256: proxylessDigest(scenario) };
        writeFileSync(scenario.proxyless.golden, `${JSON.stringify({ source: grpcSource, proxies: got }, undefined, 2)}\n`);
      }
      const counts = Object.entries(proxies).map(([p, clas]) => `${p}: ${Object.keys(clas).length}`);
      const errors = istiod.log.filter((l) => /\terror\t/.test(l) && !/leader|lease|istio-ca|webhook|injector/i.test(l));
      console.log(
        `${name}: ClusterLoadAssignments per proxy: ${counts.join(', ')} (${Date.now() - started} ms)` +
          (errors.length > 0 ? `\nistiod errors:\n  ${errors.slice(0, 10).join('\n  ')}` : ''),
      );
    } finally {
      await istiod.stop();
    }
  } finally {
    await clusters.stop();
  }
}

runScenarios(Object.keys(SCENARIOS), captureScenario);
