/**
 * Captures what the real istiod serves to ambient's data plane for the cluster state in
 * testdata/ambient/cluster/, the oracle test/e2e/ambient-golden.test.ts holds meshpilot to.
 *
 *   npx tsx scripts/capture-ambient-goldens.ts
 *
 * Steps: a fresh real kube-apiserver (../shared/kube/start-apiserver); Istio's and the Gateway
 * API CRDs; every object of testdata/ambient/cluster/*.yaml in file order, Pod and Node status
 * written through the status subresource (test/support/ambient/cluster-state.ts). Then the real
 * istiod (../shared/istiod/run-kube) with PILOT_ENABLE_AMBIENT=true and the gateway deployment
 * controller off (the state holds the waypoint's Service and Pod, as that controller and a kubelet
 * would leave them). Once istiod has written the waypoint Gateway's status address (the ambient
 * index knows a waypoint by it), the script connects over plaintext Delta ADS:
 * - as ztunnel (wildcard istio.workload.Address and istio.security.Authorization), twice, and
 *   fails if the two captures differ (the corpus must be deterministic);
 * - as the waypoint's Envoy (wildcard CDS/LDS, then EDS/RDS by name).
 * - as the same waypoint's Envoy on a dual-stack Pod (INSTANCE_IPS of both families).
 * Output: testdata/ambient/istiod/wds.json, waypoint.json and waypoint-dual-stack.json (resources by name, proto3 JSON; no
 * versions or nonces: istiod's versions are its own content hashes), with the fields of
 * test/support/ambient/differences.ts NORMALISED already rewritten, so a recapture of the same
 * state changes nothing.
 * Env: ISTIOD_RUN_KUBE overrides the run-kube script; other env (ISTIOD_BIN …) passes through.
 * CI does not run this: it needs istiod's build (../shared/istiod/build, 15-20 minutes once).
 */
import { isDeepStrictEqual } from 'node:util';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startKubeCluster } from '../test/support/kube.js';
import {
  AMBIENT_CONTROL_PLANE_ENV,
  AMBIENT_DIR,
  applyClusterState,
  clusterStateDigest,
  loadClusterState,
  waitForWaypointAddresses,
} from '../test/support/ambient/cluster-state.js';
import {
  complete,
  captureWaypoint,
  captureZtunnel,
  WAYPOINT,
  WAYPOINT_IPV6,
  waypointDocument,
  waypointNode,
  wdsDocument,
  ztunnelNode,
} from '../test/support/ambient/delta-capture.js';
import { normaliseSections, WAYPOINT_SECTIONS, WDS_SECTIONS } from '../test/support/ambient/golden-diff.js';
import { ISTIOD_MODULE, PROXY_ISTIO_VERSION, startIstiodKube } from './istiod-capture.js';

async function main(): Promise<void> {
  const started = Date.now();
  const state = loadClusterState();
  const cluster = await startKubeCluster();
  try {
    await applyClusterState(cluster, state);
    const istiod = await startIstiodKube(cluster.kubeconfigPath, AMBIENT_CONTROL_PLANE_ENV);
    try {
      const missing = await waitForWaypointAddresses(cluster, state, 60_000);
      if (missing.length > 0) throw new Error(`istiod wrote no status address on waypoint ${missing.join(', ')}`);
      // The status is written by a controller of its own; give the ambient index a moment to take it in.
      await new Promise((r) => setTimeout(r, 2000));
      const wds = normaliseSections(wdsDocument(complete(await captureZtunnel(istiod.grpcAddr), 'ztunnel')), WDS_SECTIONS);
      const again = normaliseSections(wdsDocument(complete(await captureZtunnel(istiod.grpcAddr), 'ztunnel')), WDS_SECTIONS);
      if (!isDeepStrictEqual(wds, again))
        throw new Error('two ztunnel captures from the same istiod differ: the WDS corpus would not be stable');
      const waypoint = normaliseSections(waypointDocument(complete(await captureWaypoint(istiod.grpcAddr), 'waypoint')), WAYPOINT_SECTIONS);
      // The same waypoint as a dual-stack Pod's agent reports it (both families in INSTANCE_IPS).
      const dualStackNode = waypointNode([WAYPOINT.ip, WAYPOINT_IPV6]);
      const dualStack = normaliseSections(
        waypointDocument(complete(await captureWaypoint(istiod.grpcAddr, dualStackNode), 'waypoint')),
        WAYPOINT_SECTIONS,
      );
      const source = (node: string): Record<string, unknown> => ({
        istiod: ISTIOD_MODULE,
        env: AMBIENT_CONTROL_PLANE_ENV,
        node,
        ISTIO_VERSION: PROXY_ISTIO_VERSION,
        clusterStateSha256: clusterStateDigest(),
      });
      const out = join(AMBIENT_DIR, 'istiod');
      mkdirSync(out, { recursive: true });
      writeFileSync(join(out, 'wds.json'), `${JSON.stringify({ source: source(ztunnelNode().id), ...wds }, undefined, 2)}\n`);
      writeFileSync(join(out, 'waypoint.json'), `${JSON.stringify({ source: source(waypointNode().id), ...waypoint }, undefined, 2)}\n`);
      writeFileSync(
        join(out, 'waypoint-dual-stack.json'),
        `${JSON.stringify({ source: { ...source(dualStackNode.id), INSTANCE_IPS: [WAYPOINT.ip, WAYPOINT_IPV6] }, ...dualStack }, undefined, 2)}\n`,
      );
      const errors = istiod.log.filter((l) => /\terror\t/.test(l) && !/leader|lease|istio-ca|webhook|injector/i.test(l));
      console.log(
        `wds: ${wds.addresses.length} addresses, ${wds.authorizations.length} authorizations; waypoint: ${waypoint.listeners.length} listeners, ` +
          `${waypoint.routes.length} routes, ${waypoint.clusters.length} clusters, ${waypoint.endpoints.length} endpoints (${Date.now() - started} ms)` +
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
