/**
 * Incremental vs full PushContext, in process: for a mesh of S services (E WorkloadEntries each,
 * a DestinationRule and a VirtualService per service; bench/lib/mesh-docs.ts), what one change
 * costs the control plane before any proxy is pushed, and what the push then costs per view.
 *
 *   npx tsx bench/push-context-bench.ts [--services 1000] [--namespaces 10] [--endpoints 10] [--iterations 7]
 *
 * Per change (one VirtualService edit, one WorkloadEntry address change):
 * - full: a new PushContext from scratch with an empty cache (istiod's model: rebuild everything);
 * - incremental: what the server does (src/xds/discovery-server.ts onDebounced): the change set,
 *   precise cache invalidation, a PushContext reusing every index of an unchanged kind;
 * - regen: generating a sidecar's config (LDS, RDS, CDS, EDS) after the change, with the cache kept
 *   across pushes (only what the change touched is rebuilt) vs cold.
 * Prints a table and writes bench/results/push-context-bench.json.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { configKeyString } from '../src/config/config.js';
import { changeSet } from '../src/model/dependency-tokens.js';
import { defaultMeshConfig } from '../src/config/mesh/mesh-config.js';
import type { Proxy } from '../src/model/proxy.js';
import { PushContext } from '../src/model/push-context.js';
import { pushRequest } from '../src/model/push-request.js';
import { registerEnvoyGenerators } from '../src/networking/envoy-generators.js';
import { silentLogger } from '../src/util/log.js';
import { GeneratorRegistry } from '../src/xds/generator.js';
import { TypeUrl } from '../src/xds/type-urls.js';
import { XdsCache } from '../src/model/xds-cache.js';
import { REPO_ROOT } from '../test/support/paths.js';
import { generateFor, proxyFor } from '../test/support/scenario.js';
import { configSource, meshDocs, workloadAddress, type Doc } from './lib/mesh-docs.js';

const { values: opt } = parseArgs({
  options: {
    services: { type: 'string', default: '1000' },
    namespaces: { type: 'string', default: '10' },
    endpoints: { type: 'string', default: '10' },
    iterations: { type: 'string', default: '7' },
    warmup: { type: 'string', default: '3' },
    out: { type: 'string', default: join(REPO_ROOT, 'bench/results/push-context-bench.json') },
  },
});

function positive(name: string, v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer, got "${v}"`);
  return n;
}

const shape = {
  services: positive('services', opt.services),
  namespaces: positive('namespaces', opt.namespaces),
  endpoints: positive('endpoints', opt.endpoints),
  sidecar: false,
};
const ITERATIONS = positive('iterations', opt.iterations);
/** Untimed rounds first: a server runs these paths over and over, so they are compiled (JIT) there. */
const WARMUP = Number(opt.warmup);
if (!Number.isInteger(WARMUP) || WARMUP < 0) throw new Error(`--warmup must be an integer ≥ 0, got "${opt.warmup}"`);
const mesh = defaultMeshConfig();
const ms = (start: bigint): number => Number(process.hrtime.bigint() - start) / 1e6;
const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

const docs = meshDocs(shape);
const { store, source } = configSource(docs);
const generators = registerEnvoyGenerators(new GeneratorRegistry(), {
  logger: silentLogger,
  credentials: () => ({ get: () => undefined }),
});
const proxy: Proxy = proxyFor({
  id: `sidecar~${workloadAddress(0)}~svc-0-0.ns-0~ns-0.svc.cluster.local`,
  labels: { app: 'svc-0', version: 'v1' },
});
const names = generateFor(new PushContext({ version: 'names', mesh, config: store.snapshot() }), generators, proxy);
const rds = new Set(names.routes.map((r) => r.name));
const eds = new Set(names.endpoints.map((e) => e.clusterName));

/** A sidecar's full generation as the server does it (encoded resources). */
function generate(push: PushContext): void {
  const req = pushRequest({ full: true, reason: 'config', start: 0 });
  for (const [typeUrl, subs] of [
    [TypeUrl.Listener, undefined],
    [TypeUrl.RouteConfiguration, rds],
    [TypeUrl.Cluster, undefined],
    [TypeUrl.ClusterLoadAssignment, eds],
  ] as const) {
    generators.lookup(proxy, typeUrl)?.generate(proxy, { typeUrl, names: subs ?? new Set(), wildcard: subs === undefined }, push, req);
  }
}

const find = (kind: string, name: string): Doc => {
  const d = docs.find((x) => x.kind === kind && (x.metadata as { name: string }).name === name);
  if (!d) throw new Error(`no ${kind} ${name}`);
  return structuredClone(d);
};

interface Change {
  readonly name: string;
  apply(i: number): string;
}
const changes: Change[] = [
  {
    name: 'VirtualService edit',
    apply: (i) => {
      const vs = find('VirtualService', 'svc-1');
      ((vs.spec as { http: { timeout?: string }[] }).http[1] ?? {}).timeout = `${6 + i}s`;
      source.update(vs as never);
      return configKeyString({ kind: 'VirtualService', namespace: 'ns-1', name: 'svc-1' });
    },
  },
  {
    name: 'WorkloadEntry address change',
    apply: (i) => {
      const we = find('WorkloadEntry', 'svc-1-0');
      (we.spec as { address: string }).address = `10.99.${i % 256}.1`;
      source.update(we as never);
      return configKeyString({ kind: 'WorkloadEntry', namespace: 'ns-1', name: 'svc-1-0' });
    },
  },
];

interface Row {
  change: string;
  fullBuildMs: number;
  incrementalBuildMs: number;
  ratio: number;
  rebuilt: readonly string[];
  regenWarmMs: number;
  regenColdMs: number;
  invalidated: number;
}
const rows: Row[] = [];
const cache = new XdsCache();
let push = new PushContext({ version: 'v0', mesh, config: store.snapshot(), cache });
generate(push);
for (const change of changes) {
  const full: number[] = [];
  const inc: number[] = [];
  const warm: number[] = [];
  const cold: number[] = [];
  let rebuilt: readonly string[] = [];
  let invalidated = 0;
  let snapshot = store.snapshot();
  // The server's path, change after change: incremental build, then the warm regeneration.
  for (let i = -WARMUP; i < ITERATIONS; i++) {
    const key = change.apply(i);
    snapshot = store.snapshot();
    const req = pushRequest({ full: true, configsUpdated: [key], reason: 'config', start: 0 });
    let t = process.hrtime.bigint();
    const set = changeSet(req, push.snapshot, snapshot, mesh.domain, mesh.rootNamespace);
    const before = cache.stats().invalidated;
    if (set === 'all') cache.clear();
    else cache.invalidate(set);
    push = new PushContext({ version: `v${i}`, mesh, config: snapshot, cache, previous: push });
    const buildMs = ms(t);
    invalidated = cache.stats().invalidated - before;
    rebuilt = push.rebuild.rebuilt;
    t = process.hrtime.bigint();
    generate(push);
    if (i < 0) continue;
    inc.push(buildMs);
    warm.push(ms(t));
  }
  // istiod's path on the same snapshot: everything from scratch (timed apart, so neither side
  // pays for the other's garbage).
  for (let i = -WARMUP; i < ITERATIONS; i++) {
    let t = process.hrtime.bigint();
    const fresh = new PushContext({ version: `full${i}`, mesh, config: snapshot });
    const buildMs = ms(t);
    t = process.hrtime.bigint();
    generate(fresh);
    if (i < 0) continue;
    full.push(buildMs);
    cold.push(ms(t));
  }
  const f = median(full);
  const n = median(inc);
  rows.push({
    change: change.name,
    fullBuildMs: f,
    incrementalBuildMs: n,
    ratio: f / n,
    rebuilt,
    regenWarmMs: median(warm),
    regenColdMs: median(cold),
    invalidated,
  });
}

console.log(
  `push-context-bench: ${shape.services} services, ${shape.namespaces} namespaces, ${shape.endpoints} endpoints/service (${shape.services * shape.endpoints} WorkloadEntries), no Sidecar; median of ${ITERATIONS} after ${WARMUP} untimed`,
);
console.log(
  'change                          full-build-ms  incr-build-ms  full/incr  rebuilt indexes        cache-entries-invalidated  sidecar-regen-warm-ms  sidecar-regen-cold-ms',
);
for (const r of rows) {
  console.log(
    [
      r.change.padEnd(30),
      r.fullBuildMs.toFixed(2).padStart(13),
      r.incrementalBuildMs.toFixed(2).padStart(13),
      `${r.ratio.toFixed(0)}x`.padStart(9),
      r.rebuilt.join(',').padEnd(22),
      String(r.invalidated).padStart(25),
      r.regenWarmMs.toFixed(1).padStart(21),
      r.regenColdMs.toFixed(1).padStart(21),
    ].join('  '),
  );
}
await mkdir(dirname(opt.out), { recursive: true });
await writeFile(opt.out, `${JSON.stringify({ shape, iterations: ITERATIONS, rows }, undefined, 2)}\n`);
