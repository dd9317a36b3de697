/**
 * A small live mesh for the web console: meshpilot on a temp config directory (a service with a
 * route, one rejected object, one analyzer finding) and a few raw ADS clients of every kind
 * (sidecars, a gateway, proxyless gRPC) that ACK everything. Shared by the browser test and
 * scripts/console-screenshots.ts, which regenerates docs/console-*.png.
 */
import { startMeshpilot, type Meshpilot, type StartOptions } from './meshpilot-process.js';
import { dest, destinationRule, serviceEntry, virtualService, workloadEntry } from './mesh-fixtures.js';
import { AdsStream, proxylessAdsNode, type AdsNode } from './raw-ads-client.js';
import { tempDir, type TempDir } from './temp-dir.js';
import { TYPE } from './xds-resources.js';
import { writeYaml } from './yaml-files.js';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const CONSOLE_HOST = 'echo.default.svc.cluster.local';
const LISTENER = `${CONSOLE_HOST}:8080`;
const ISTIO_VERSION = '1.28.0';

/** A VirtualService whose weight is out of range: rejected with its file and line. */
const REJECTED_YAML = `apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: broken-weights
  namespace: default
spec:
  hosts: [broken.default.svc.cluster.local]
  http:
  - route:
    - destination: {host: echo.default.svc.cluster.local}
      weight: -5
`;

/**
 * The mesh's config. `maxConnections` varies the DestinationRule, so a rewrite changes every
 * Envoy's clusters (CDS bytes on the wire), and `timeout` the route.
 */
export function consoleMeshDocs(timeout: string, maxConnections = 100): unknown[] {
  return [
    serviceEntry('echo', { host: CONSOLE_HOST, selector: { app: 'echo' } }),
    workloadEntry('echo-v1', { port: 18080, labels: { app: 'echo', version: 'v1' } }),
    destinationRule('echo', {
      host: CONSOLE_HOST,
      subsets: { v1: { version: 'v1' } },
      trafficPolicy: { connectionPool: { tcp: { maxConnections } } },
    }),
    {
      ...virtualService('echo-routes', { hosts: [CONSOLE_HOST], http: [{ route: [dest(CONSOLE_HOST, 'v1')] }] }),
      spec: { hosts: [CONSOLE_HOST], http: [{ timeout, route: [dest(CONSOLE_HOST, 'v1')] }] },
    },
    // Routes to a host nobody defines: `meshctl analyze` reports IST0101.
    virtualService('typo-routes', {
      hosts: ['typo.default.svc.cluster.local'],
      http: [{ route: [dest('echo.defualt.svc.cluster.local')] }],
    }),
  ];
}

function envoyNode(kind: 'sidecar' | 'router', ip: string, pod: string, namespace: string): AdsNode {
  return {
    id: `${kind}~${ip}~${pod}.${namespace}~${namespace}.svc.cluster.local`,
    metadata: { NAMESPACE: namespace, ISTIO_VERSION, CLUSTER_ID: 'Kubernetes' },
  };
}

export interface ConsoleScenario {
  readonly mp: Meshpilot;
  readonly dir: TempDir;
  readonly streams: readonly AdsStream[];
  /** `http://host:port/console` */
  readonly url: string;
  /** Rewrites the mesh config with another route timeout and connection limit (a change every proxy sees). */
  changeRoute(timeout: string, maxConnections: number): Promise<void>;
  close(): Promise<void>;
}

export async function startConsoleScenario(opts: { sidecars?: number; start?: Partial<StartOptions> } = {}): Promise<ConsoleScenario> {
  const dir = tempDir('meshpilot-console-');
  await writeYaml(dir.path, 'mesh.yaml', consoleMeshDocs('5s'));
  writeFileSync(join(dir.path, 'broken.yaml'), REJECTED_YAML);
  const mp = await startMeshpilot({ configDir: dir.path, ...opts.start });
  const streams: AdsStream[] = [];
  const open = (node: AdsNode, subscribe: (s: AdsStream) => void): void => {
    const s = AdsStream.open(mp.grpcAddr, { node, passive: true });
    s.onResponse((r) => s.ack(r.resp));
    subscribe(s);
    streams.push(s);
  };
  const envoy = (s: AdsStream): void => {
    s.subscribe(TYPE.CDS, []);
    s.subscribe(TYPE.LDS, []);
  };
  for (let i = 1; i <= (opts.sidecars ?? 4); i++) open(envoyNode('sidecar', `10.0.0.${i}`, `web-${i}`, 'shop'), envoy);
  open(envoyNode('router', '10.0.1.1', 'ingress-gateway-1', 'istio-system'), envoy);
  for (const pod of ['grpc-client-1', 'grpc-client-2']) open(proxylessAdsNode(pod), (s) => s.subscribe(TYPE.LDS, [LISTENER]));
  return {
    mp,
    dir,
    streams,
    url: `http://${mp.httpAddr}/console`,
    async changeRoute(timeout, maxConnections) {
      await writeYaml(dir.path, 'mesh.yaml', consoleMeshDocs(timeout, maxConnections));
    },
    async close() {
      for (const s of streams) s.close();
      await mp.stop();
      await dir.remove();
    },
  };
}
