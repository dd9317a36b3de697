/**
 * Side by side: the EDS the real istiod and meshpilot serve for a Kubernetes Service that selects
 * WorkloadEntries, on one real kube-apiserver.
 *
 *   npx tsx scripts/compare-kube-service-workload-entries.ts
 *
 * State: namespace `shop` with Service `vm` (selector app=vm; port 80 → targetPort `web`, port 70 →
 * 7070), a headless Service `vm-headless` with the same selector, and WorkloadEntries: `vm-1`
 * (ports web: 9080, locality, service account, weight 3), `vm-2` (no ports: not on port 80), `vm-3`
 * health-checked without a Healthy condition (unhealthy), `vm-4` with a hostname address, and
 * `vm-5` in another namespace. One sidecar in `shop` captures CDS, LDS and every EDS cluster from
 * each (istiod through ../shared/istiod/run-kube, then meshpilot built from this checkout); the
 * ClusterLoadAssignments of the two Services are printed and compared (exit 1 when they differ).
 * CI does not run this (it needs istiod's build).
 */
import { isDeepStrictEqual } from 'node:util';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fromBinary, toJson } from '@bufbuild/protobuf';
import { ClusterLoadAssignmentSchema } from '../src/gen/envoy/config/endpoint/v3/endpoint_pb.js';
import { startKubeCluster } from '../test/support/kube.js';
import { CoreClient, IstioClient } from '../test/support/kube-objects.js';
import { startMeshpilot } from '../test/support/meshpilot-process.js';
import { TYPE } from '../test/support/xds-resources.js';
import { capture, startIstiodKube } from './istiod-capture.js';

const NS = 'shop';
const CLUSTERS = [`outbound|80||vm.${NS}.svc.cluster.local`, `outbound|70||vm.${NS}.svc.cluster.local`];

type Cla = Record<string, unknown>;

async function endpointsFrom(addr: string): Promise<Record<string, Cla>> {
  const captured = await capture(addr, { id: `sidecar~10.66.0.9~client-1.${NS}~${NS}.svc.cluster.local`, labels: { app: 'client' } });
  const out: Record<string, Cla> = {};
  for (const a of captured.byType.get(TYPE.EDS)?.resources ?? []) {
    const cla = fromBinary(ClusterLoadAssignmentSchema, a.value);
    if (CLUSTERS.includes(cla.clusterName)) out[cla.clusterName] = toJson(ClusterLoadAssignmentSchema, cla) as Cla;
  }
  return out;
}

const entry = (name: string, spec: Record<string, unknown>, namespace = NS, annotations?: Record<string, string>) => ({
  apiVersion: 'networking.istio.io/v1',
  kind: 'WorkloadEntry' as const,
  metadata: { name, namespace, ...(annotations ? { annotations } : {}) },
  spec,
});

async function main(): Promise<void> {
  const cluster = await startKubeCluster();
  try {
    await cluster.applyIstioCrds();
    const k8s = new CoreClient(cluster.clientNode);
    for (const ns of ['istio-system', NS, 'other']) await k8s.core.createNamespace({ body: { metadata: { name: ns } } });
    const ports = [
      { name: 'http', port: 80, targetPort: 'web' },
      { name: 'tcp', port: 70, targetPort: 7070 },
    ];
    await k8s.service(NS, { metadata: { name: 'vm', namespace: NS }, spec: { selector: { app: 'vm' }, ports } });
    await k8s.service(NS, {
      metadata: { name: 'vm-headless', namespace: NS },
      spec: { clusterIP: 'None', selector: { app: 'vm' }, ports },
    });
    const istio = new IstioClient(cluster.clientNode);
    const labels = { app: 'vm' };
    await istio.create(
      entry('vm-1', {
        address: '10.88.0.5',
        labels: { ...labels, version: 'v1' },
        ports: { web: 9080 },
        serviceAccount: 'vm-sa',
        locality: 'us-east/zone-a',
        weight: 3,
      }),
    );
    await istio.create(entry('vm-2', { address: '10.88.0.6', labels }));
    await istio.create(entry('vm-3', { address: '10.88.0.7', labels }, NS, { 'proxy.istio.io/health-checks-enabled': 'true' }));
    await istio.create(entry('vm-4', { address: 'vm.example.com', labels }));
    await istio.create(entry('vm-5', { address: '10.88.0.8', labels }, 'other'));

    const istiod = await startIstiodKube(cluster.kubeconfigPath);
    let fromIstiod: Record<string, Cla>;
    try {
      await new Promise((r) => setTimeout(r, 2000));
      fromIstiod = await endpointsFrom(istiod.grpcAddr);
    } finally {
      await istiod.stop();
    }
    const dir = mkdtempSync(join(tmpdir(), 'meshpilot-compare-'));
    const mp = await startMeshpilot({
      configDir: dir,
      args: ['--kubeconfig', cluster.kubeconfigPath],
      env: { POD_NAMESPACE: 'istio-system' },
      readyTimeoutMs: 60_000,
    });
    let fromMeshpilot: Record<string, Cla>;
    try {
      fromMeshpilot = await endpointsFrom(mp.grpcAddr);
    } finally {
      await mp.stop();
      rmSync(dir, { recursive: true, force: true });
    }
    console.log(JSON.stringify({ istiod: fromIstiod, meshpilot: fromMeshpilot }, undefined, 2));
    if (!isDeepStrictEqual(fromIstiod, fromMeshpilot)) {
      console.error('EDS differs');
      process.exitCode = 1;
    } else console.error('EDS identical');
  } finally {
    await cluster.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
