/**
 * Kubernetes scale figure: S Services with E endpoints each (EndpointSlices) created through a real
 * kube-apiserver while `meshpilot discovery --kubeconfig` runs and one Envoy sidecar (raw SotW ADS:
 * wildcard CDS, then EDS for every EDS cluster) is connected. Reports how long the API writes took,
 * when the proxy held every cluster and endpoint (from the first write and from the last), and
 * meshpilot's RSS before and after.
 *
 *   npx tsx bench/kube-scale.ts [--services 1000] [--endpoints 10] [--namespaces 10] [--concurrency 16] [--dist]
 *
 * --dist runs the built CLI with plain node, as shipped (see the suite's --dist).
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { CoreV1Api, DiscoveryV1Api } from '@kubernetes/client-node';
import { ClusterSchema } from '../src/gen/envoy/config/cluster/v3/cluster_pb.js';
import { ClusterLoadAssignmentSchema } from '../src/gen/envoy/config/endpoint/v3/endpoint_pb.js';
import { startKubeCluster } from '../test/support/kube.js';
import { buildCli } from './lib/build.js';
import { startMeshpilot } from '../test/support/meshpilot-process.js';
import { AdsStream, nowMs, type Received } from '../test/support/raw-ads-client.js';
import { tempDir } from '../test/support/temp-dir.js';
import { clusterEdsName, decodeResources, endpointAddresses, TYPE } from '../test/support/xds-resources.js';

const { values: opt } = parseArgs({
  options: {
    services: { type: 'string', default: '1000' },
    endpoints: { type: 'string', default: '10' },
    namespaces: { type: 'string', default: '10' },
    concurrency: { type: 'string', default: '16' },
    timeoutMs: { type: 'string', default: '600000' },
    dist: { type: 'boolean', default: false },
  },
});

function positive(name: string, v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`--${name} must be a positive integer, got ${v}`);
  return n;
}

const S = positive('services', opt.services);
const E = positive('endpoints', opt.endpoints);
const NS = positive('namespaces', opt.namespaces);
const CONCURRENCY = positive('concurrency', opt.concurrency);
const log = (m: string): boolean => process.stderr.write(`[kube-scale] ${m}\n`);

const rssMiB = (pid: number): number => {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
};

/** Endpoint k of service i: 10.(100 + i/250).(i%250).k — unique, never loopback. */
const endpointIp = (i: number, k: number): string => `10.${100 + Math.floor(i / 250)}.${i % 250}.${k + 1}`;

async function pool(n: number, work: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < n) await work(next++);
    }),
  );
}

const cliJs = opt.dist ? buildCli(log) : undefined;
const cluster = await startKubeCluster();
const dir = tempDir('meshpilot-kube-scale-');
try {
  const core = cluster.clientNode.makeApiClient(CoreV1Api);
  const discovery = cluster.clientNode.makeApiClient(DiscoveryV1Api);
  const namespaces: string[] = [];
  for (let n = 0; n < NS; n++) namespaces.push(await cluster.namespace(`scale${n}`));
  const mp = await startMeshpilot({
    configDir: dir.path,
    args: ['--kubeconfig', cluster.kubeconfigPath],
    env: { PILOT_MAX_REQUESTS_PER_SECOND: '100000' },
    readyTimeoutMs: 60_000,
    ...(cliJs !== undefined ? { cliJs } : {}),
  });
  const rssReady = rssMiB(mp.pid);
  const stream = AdsStream.open(mp.grpcAddr, {
    node: { id: 'sidecar~10.99.0.1~probe.default~default.svc.cluster.local', metadata: { NAMESPACE: 'default' } },
    separateConnection: true,
    passive: true,
  });

  // The proxy: wildcard CDS; EDS follows the EDS clusters of the newest CDS; each response ACKed.
  const clusters = new Set<string>();
  const endpoints = new Map<string, number>();
  let totalEndpoints = 0;
  let done: (() => void) | undefined;
  const converged = new Promise<void>((resolve) => (done = resolve));
  const wantClusters = (name: string): boolean => name.startsWith('outbound|80||svc-');
  stream.onResponse((r: Received) => {
    stream.ack(r.resp);
    if (r.resp.typeUrl === TYPE.CDS) {
      const cs = decodeResources(r.resp, ClusterSchema);
      clusters.clear();
      for (const c of cs) if (wantClusters(c.name)) clusters.add(c.name);
      stream.subscribe(
        TYPE.EDS,
        cs
          .map((c) => clusterEdsName(c))
          .filter((n): n is string => n !== undefined)
          .sort(),
      );
    } else if (r.resp.typeUrl === TYPE.EDS) {
      for (const cla of decodeResources(r.resp, ClusterLoadAssignmentSchema)) {
        totalEndpoints += endpointAddresses(cla).length - (endpoints.get(cla.clusterName) ?? 0);
        endpoints.set(cla.clusterName, endpointAddresses(cla).length);
      }
    }
    if (clusters.size === S && totalEndpoints >= S * E) done?.();
  });
  stream.subscribe(TYPE.CDS, []);

  log(`creating ${S} Services × ${E} endpoints in ${NS} namespaces (${CONCURRENCY} writes in flight)`);
  const t0 = nowMs();
  await pool(S, async (i) => {
    const namespace = namespaces[i % NS]!;
    const name = `svc-${i}`;
    await core.createNamespacedService({
      namespace,
      body: { metadata: { name }, spec: { selector: { app: name }, ports: [{ name: 'http', port: 80, targetPort: 8080 }] } },
    });
    await discovery.createNamespacedEndpointSlice({
      namespace,
      body: {
        metadata: { name: `${name}-1`, labels: { 'kubernetes.io/service-name': name } },
        addressType: 'IPv4',
        endpoints: Array.from({ length: E }, (_, k) => ({ addresses: [endpointIp(i, k)], conditions: { ready: true } })),
        ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
      },
    });
  });
  const tWritten = nowMs();
  log(`API writes done in ${((tWritten - t0) / 1000).toFixed(1)} s; waiting for the proxy`);
  const timeout = positive('timeoutMs', opt.timeoutMs);
  const timer = setTimeout(() => {
    log(`timed out: proxy holds ${clusters.size}/${S} clusters, ${totalEndpoints}/${S * E} endpoints`);
    process.exit(1);
  }, timeout);
  await converged;
  clearTimeout(timer);
  const tDone = nowMs();
  const rssDone = rssMiB(mp.pid);
  const result = {
    services: S,
    endpointsPerService: E,
    namespaces: NS,
    apiWritesS: +((tWritten - t0) / 1000).toFixed(2),
    proxyHasAllFromFirstWriteS: +((tDone - t0) / 1000).toFixed(2),
    proxyHasAllAfterLastWriteMs: Math.round(tDone - tWritten),
    bytesToProxyMiB: +(stream.bytesReceived / 1048576).toFixed(2),
    rssReadyMiB: Math.round(rssReady),
    rssAfterMiB: Math.round(rssDone),
  };
  console.log(JSON.stringify(result, null, 2));
  stream.close();
  await mp.stop();
} finally {
  await dir.remove();
  await cluster.stop();
}
