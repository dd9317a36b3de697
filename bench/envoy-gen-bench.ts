/**
 * Envoy config generation benchmark, in process: for a mesh of S services (each with E endpoints,
 * a DestinationRule with two subsets and a VirtualService splitting between them) spread over
 * NS namespaces, how long one push takes to build a sidecar's full config (LDS, RDS for the
 * listeners' routes, CDS, EDS for every EDS cluster) and how many bytes it is — with no Sidecar
 * (the proxy sees every service) and with a Sidecar importing only its own namespace and
 * istio-system (what most production meshes configure).
 *
 *   npx tsx bench/envoy-gen-bench.ts [--services 100,1000] [--namespaces 10] [--endpoints 3] [--iterations 5]
 *
 * Per scenario: PushContext build (config indexes, registry), the first proxy of a push (cold:
 * nothing shared yet), a second proxy of the same namespace (warm: shared per-view resources),
 * bytes per type. Timed generation is what the server does (encoded resources, as sent); the
 * RDS and EDS names Envoy would subscribe to are learned once, untimed. Prints a table and writes bench/results/envoy-gen-bench.json.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { configStore, meshDocs, type Doc } from './lib/mesh-docs.js';
import { defaultMeshConfig } from '../src/config/mesh/mesh-config.js';
import { PushContext } from '../src/model/push-context.js';
import { registerEnvoyGenerators } from '../src/networking/envoy-generators.js';
import { silentLogger } from '../src/util/log.js';
import { GeneratorRegistry } from '../src/xds/generator.js';
import { TypeUrl } from '../src/xds/type-urls.js';
import { generateFor, proxyFor, type GeneratedConfig } from '../test/support/scenario.js';
import type { Proxy } from '../src/model/proxy.js';
import { pushRequest } from '../src/model/push-request.js';
import type { XdsResource } from '../src/xds/resource.js';
import { REPO_ROOT } from '../test/support/paths.js';

const { values: opt } = parseArgs({
  options: {
    services: { type: 'string', default: '100,1000' },
    namespaces: { type: 'string', default: '10' },
    endpoints: { type: 'string', default: '3' },
    iterations: { type: 'string', default: '5' },
    out: { type: 'string', default: join(REPO_ROOT, 'bench/results/envoy-gen-bench.json') },
  },
});

function positive(name: string, v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer, got "${v}"`);
  return n;
}

const SERVICE_COUNTS = opt.services.split(',').map((s) => positive('services', s));
const NAMESPACES = positive('namespaces', opt.namespaces);
const ENDPOINTS = positive('endpoints', opt.endpoints);
const ITERATIONS = positive('iterations', opt.iterations);

function buildPush(docs: readonly Doc[], version: string): PushContext {
  return new PushContext({ version, mesh: defaultMeshConfig(), config: configStore(docs).snapshot() });
}

const ms = (start: bigint): number => Number(process.hrtime.bigint() - start) / 1e6;
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

interface Row {
  services: number;
  sidecar: boolean;
  pushBuildMs: number;
  coldProxyMs: number;
  warmProxyMs: number;
  bytes: Record<string, number>;
  totalBytes: number;
  clusters: number;
  listeners: number;
}

/** Names Envoy would subscribe to for RDS and EDS, learned once from a decoded generation. */
interface Subscriptions {
  readonly rds: ReadonlySet<string>;
  readonly eds: ReadonlySet<string>;
}

function subscriptionsOf(config: GeneratedConfig): Subscriptions {
  return {
    rds: new Set(config.routes.map((r) => r.name)),
    eds: new Set(config.endpoints.map((e) => e.clusterName)),
  };
}

/** One proxy's full generation as the server does it (encoded resources, nothing decoded): the timed part. */
function generateEncoded(
  push: PushContext,
  generators: GeneratorRegistry,
  proxy: Proxy,
  subs: Subscriptions,
): Map<string, readonly XdsResource[]> {
  const req = pushRequest({ full: true, reason: 'config', start: 0 });
  const run = (typeUrl: string, names: ReadonlySet<string> | undefined): readonly XdsResource[] =>
    generators.lookup(proxy, typeUrl)?.generate(proxy, { typeUrl, names: names ?? new Set(), wildcard: names === undefined }, push, req) ??
    [];
  return new Map([
    [TypeUrl.Listener, run(TypeUrl.Listener, undefined)],
    [TypeUrl.RouteConfiguration, run(TypeUrl.RouteConfiguration, subs.rds)],
    [TypeUrl.Cluster, run(TypeUrl.Cluster, undefined)],
    [TypeUrl.ClusterLoadAssignment, run(TypeUrl.ClusterLoadAssignment, subs.eds)],
  ]);
}

function run(services: number, withSidecar: boolean): Row {
  const docs = meshDocs({ services, namespaces: NAMESPACES, endpoints: ENDPOINTS, sidecar: withSidecar });
  const generators = registerEnvoyGenerators(new GeneratorRegistry(), {
    logger: silentLogger,
    credentials: () => ({ get: () => undefined }),
  });
  // ns-0's first workload and a second one: same namespace and Sidecar, different workload.
  const first = proxyFor({ id: 'sidecar~10.200.0.0~svc-0-0.ns-0~ns-0.svc.cluster.local', labels: { app: 'svc-0', version: 'v1' } });
  const second = proxyFor({
    id: `sidecar~10.200.0.${NAMESPACES * ENDPOINTS}~svc-${NAMESPACES}-0.ns-0~ns-0.svc.cluster.local`,
    labels: { app: `svc-${NAMESPACES}`, version: 'v1' },
  });
  const subs = subscriptionsOf(generateFor(buildPush(docs, 'names'), generators, first));
  const build: number[] = [];
  const cold: number[] = [];
  const warm: number[] = [];
  let last: Map<string, readonly XdsResource[]> | undefined;
  for (let it = 0; it < ITERATIONS; it++) {
    let t = process.hrtime.bigint();
    const push = buildPush(docs, `v${it}`);
    build.push(ms(t));
    t = process.hrtime.bigint();
    last = generateEncoded(push, generators, first, subs);
    cold.push(ms(t));
    t = process.hrtime.bigint();
    generateEncoded(push, generators, second, subs);
    warm.push(ms(t));
  }
  const bytes: Record<string, number> = {};
  for (const [typeUrl, rs] of last!) bytes[typeUrl.slice(typeUrl.lastIndexOf('.') + 1)] = rs.reduce((s, r) => s + r.value.length, 0);
  return {
    services,
    sidecar: withSidecar,
    pushBuildMs: median(build),
    coldProxyMs: median(cold),
    warmProxyMs: median(warm),
    bytes,
    totalBytes: Object.values(bytes).reduce((a, b) => a + b, 0),
    clusters: last!.get(TypeUrl.Cluster)?.length ?? 0,
    listeners: last!.get(TypeUrl.Listener)?.length ?? 0,
  };
}

const rows: Row[] = [];
for (const s of SERVICE_COUNTS) for (const sc of [false, true]) rows.push(run(s, sc));

const kb = (n: number | undefined): string => ((n ?? 0) / 1024).toFixed(1);
console.log(`envoy-gen-bench: ${NAMESPACES} namespaces, ${ENDPOINTS} endpoints/service, median of ${ITERATIONS}`);
console.log(
  'services  sidecar  push-build-ms  proxy-cold-ms  proxy-warm-ms  listeners  clusters  LDS-KiB  RDS-KiB  CDS-KiB  EDS-KiB  total-KiB',
);
for (const r of rows) {
  console.log(
    [
      String(r.services).padStart(8),
      (r.sidecar ? 'yes' : 'no').padStart(7),
      r.pushBuildMs.toFixed(1).padStart(13),
      r.coldProxyMs.toFixed(1).padStart(13),
      r.warmProxyMs.toFixed(1).padStart(13),
      String(r.listeners).padStart(9),
      String(r.clusters).padStart(8),
      kb(r.bytes.Listener).padStart(7),
      kb(r.bytes.RouteConfiguration).padStart(7),
      kb(r.bytes.Cluster).padStart(7),
      kb(r.bytes.ClusterLoadAssignment).padStart(7),
      kb(r.totalBytes).padStart(9),
    ].join('  '),
  );
}
await mkdir(dirname(opt.out), { recursive: true });
await writeFile(
  opt.out,
  `${JSON.stringify({ namespaces: NAMESPACES, endpoints: ENDPOINTS, iterations: ITERATIONS, rows }, undefined, 2)}\n`,
);
