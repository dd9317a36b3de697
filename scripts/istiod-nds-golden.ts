/**
 * Captures the real istiod's DNS name tables (NDS) for testdata/nds/config, the oracle
 * test/scenarios/nds-parity.test.ts holds meshpilot to.
 *
 *   npx tsx scripts/istiod-nds-golden.ts [file|kube]
 *
 * istiod runs in file mode on the config directory (../shared/istiod/run) with
 * PILOT_ENABLE_IP_AUTOALLOCATE=false: its address-allocating controller needs Kubernetes (it writes
 * ServiceEntry status), so without it istiod's ServiceEntry registry allocates addresses itself,
 * the allocation meshpilot implements. Each proxy of NDS_PROXIES connects over plaintext ADS with
 * node metadata as Istio's agent sends it (DNS_CAPTURE, DNS_AUTO_ALLOCATE as the proxy has them)
 * and asks for `istio.networking.nds.v1.NameTable` alone, as the agent does on Envoy's stream.
 * Output: testdata/nds/istiod.json — per proxy, the whole NameTable (proto3 JSON). Then (`kube`)
 * the same for the Kubernetes state of testdata/nds/cluster on a real kube-apiserver with istiod
 * run-kube (file mode has no Kubernetes Services): testdata/nds/istiod-kube.json.
 * Env: ISTIOD_RUN overrides the run script; other env (ISTIOD_BIN …) passes through.
 */
import { writeFileSync } from 'node:fs';
import { create, fromBinary, toBinary, toJson } from '@bufbuild/protobuf';
import * as grpc from '@grpc/grpc-js';
import { NameTableSchema } from '../src/gen/dns/proto/nds_pb.js';
import {
  DiscoveryRequestSchema,
  DiscoveryResponseSchema,
  type DiscoveryRequest,
  type DiscoveryResponse,
} from '../src/gen/envoy/service/discovery/v3/discovery_pb.js';
import { TypeUrl } from '../src/xds/type-urls.js';
import {
  NDS_CLUSTER_DIR,
  NDS_CONFIG_DIR,
  NDS_GOLDEN,
  NDS_ISTIOD_ENV,
  NDS_KUBE_GOLDEN,
  NDS_KUBE_PROXIES,
  NDS_PROXIES,
  ndsConfigDigest,
  type NdsGolden,
} from '../test/scenarios/nds-fixture.js';
import { ADS_PATH } from '../test/support/raw-ads-client.js';
import type { NodeSpec } from '../test/support/scenario.js';
import { applyClusterState, loadClusterState } from '../test/support/ambient/cluster-state.js';
import { startKubeCluster } from '../test/support/kube.js';
import { waitFor } from '../test/support/wait.js';
import { configObjects, ISTIOD_MODULE, nodeFor, startIstiod, startIstiodKube } from './istiod-capture.js';

/** The first NameTable istiod answers a lone NDS subscription with (ACKed, then the stream ends). */
async function captureNds(addr: string, spec: NodeSpec): Promise<unknown> {
  const client = new grpc.Client(addr, grpc.credentials.createInsecure());
  const call = client.makeBidiStreamRequest<DiscoveryRequest, DiscoveryResponse>(
    ADS_PATH,
    (r) => Buffer.from(toBinary(DiscoveryRequestSchema, r)),
    (b) => fromBinary(DiscoveryResponseSchema, b),
  );
  try {
    const resp = await new Promise<DiscoveryResponse>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no NDS answer for ${spec.id} in 30 s`)), 30_000);
      call.on('error', (e: Error) => reject(e));
      call.on('data', (r: DiscoveryResponse) => {
        clearTimeout(timer);
        call.write(create(DiscoveryRequestSchema, { typeUrl: TypeUrl.NameTable, versionInfo: r.versionInfo, responseNonce: r.nonce }));
        resolve(r);
      });
      call.write(create(DiscoveryRequestSchema, { node: nodeFor(spec), typeUrl: TypeUrl.NameTable }));
    });
    if (resp.typeUrl !== TypeUrl.NameTable || resp.resources.length !== 1)
      throw new Error(`${spec.id}: expected one NameTable, got ${resp.resources.length} of ${resp.typeUrl}`);
    return toJson(NameTableSchema, fromBinary(NameTableSchema, resp.resources[0]!.value));
  } finally {
    call.end();
    call.cancel();
    client.close();
  }
}

async function fileMode(): Promise<void> {
  for (const [k, v] of Object.entries(NDS_ISTIOD_ENV)) process.env[k] = v;
  const istiod = await startIstiod(NDS_CONFIG_DIR, configObjects(NDS_CONFIG_DIR).istio);
  try {
    const proxies: { id: string; table: unknown }[] = [];
    for (const p of NDS_PROXIES) proxies.push({ id: p.id, table: await captureNds(istiod.grpcAddr, p) });
    const golden: NdsGolden = { istiod: ISTIOD_MODULE, env: NDS_ISTIOD_ENV, configDigest: ndsConfigDigest(), proxies };
    writeFileSync(NDS_GOLDEN, `${JSON.stringify(golden, null, 2)}\n`);
    console.log(`wrote ${NDS_GOLDEN}: ${proxies.length} proxies`);
  } finally {
    await istiod.stop();
  }
}

/**
 * Kubernetes Services (short names, a headless StatefulSet's pod names): the state of
 * testdata/nds/cluster on a fresh kube-apiserver, istiod (run-kube) on it.
 */
async function kubeMode(): Promise<void> {
  const cluster = await startKubeCluster();
  try {
    await applyClusterState(cluster, loadClusterState(NDS_CLUSTER_DIR));
    const istiod = await startIstiodKube(cluster.kubeconfigPath, NDS_ISTIOD_ENV);
    try {
      // Ready does not promise the informers have delivered every Service and EndpointSlice.
      let proxies: { id: string; table: unknown }[] = [];
      await waitFor(
        async () => {
          proxies = [];
          for (const p of NDS_KUBE_PROXIES) proxies.push({ id: p.id, table: await captureNds(istiod.grpcAddr, p) });
          return JSON.stringify(proxies).includes('mysql-1.mysql.db.svc.cluster.local');
        },
        { timeoutMs: 60_000, intervalMs: 1000, description: 'istiod holding the Kubernetes services' },
      );
      const golden: NdsGolden = { istiod: ISTIOD_MODULE, env: NDS_ISTIOD_ENV, configDigest: ndsConfigDigest(NDS_CLUSTER_DIR), proxies };
      writeFileSync(NDS_KUBE_GOLDEN, `${JSON.stringify(golden, null, 2)}\n`);
      console.log(`wrote ${NDS_KUBE_GOLDEN}: ${proxies.length} proxies`);
    } finally {
      await istiod.stop();
    }
  } finally {
    await cluster.stop();
  }
}

async function main(): Promise<void> {
  const which = process.argv[2];
  if (which !== 'kube') await fileMode();
  if (which !== 'file') await kubeMode();
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
