/**
 * The control plane's own cost of a change, without a transport: the suite's mesh and sidecars
 * (bench/suite), one DiscoveryServer with the real generators, and N in-process SotW streams that
 * subscribe as Envoy does (CDS/LDS wildcard, then EDS/RDS from what they receive) and ACK every
 * response. Per churn step: the CPU of everything from the config change until no stream has a
 * response un-ACKed, the plan (debounced change → pushes queued), proxies pushed, bytes encoded.
 * gRPC/HTTP2 framing and request decoding are not in these figures (the suite measures them).
 *
 *   npx tsx bench/push-path-bench.ts [--services 1000] [--sidecars 2000] [--namespaces 10] [--instances 3] [--rounds 3] [--memory]
 *
 * --memory (run under `node --expose-gc --import tsx`): after sync, the heap and the encoded bytes
 * the xDS cache holds per kind of entry (the key's first two fields).
 */
import { EventEmitter } from 'node:events';
import { parseArgs } from 'node:util';
import { create, fromBinary } from '@bufbuild/protobuf';
import { BinaryReader, type WireType } from '@bufbuild/protobuf/wire';
import { ListenerSchema } from '../src/gen/envoy/config/listener/v3/listener_pb.js';
import { DiscoveryRequestSchema, DiscoveryResponseSchema } from '../src/gen/envoy/service/discovery/v3/discovery_pb.js';
import { MemorySource } from '../src/config/sources/memory-source.js';
import { ConfigStore } from '../src/config/store.js';
import { defaultMeshConfig } from '../src/config/mesh/mesh-config.js';
import { registerEnvoyGenerators } from '../src/networking/envoy-generators.js';
import { createLogger, silentLogger } from '../src/util/log.js';
import { configKeyString } from '../src/config/config.js';
import { pushRequest } from '../src/model/push-request.js';
import type { AdsStream } from '../src/xds/ads-service.js';
import { DiscoveryServer } from '../src/xds/discovery-server.js';
import { GeneratorRegistry } from '../src/xds/generator.js';
import { TypeUrl } from '../src/xds/type-urls.js';
import { rdsNames } from '../test/support/scenario.js';
import { clusterEdsServiceName } from './load-gen/resource-wire.js';
import type { ProxyPlan } from './load-gen/protocol.js';
import { Mesh } from './suite/mesh.js';
import { scenarioFiles, scenarioProxies } from './suite/scenario.js';
import { scenarioByName } from './suite/scenarios/index.js';
import { marker } from './suite/steps.js';

const { values: opt } = parseArgs({
  options: {
    services: { type: 'string', default: '1000' },
    sidecars: { type: 'string', default: '2000' },
    namespaces: { type: 'string', default: '10' },
    instances: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '3' },
    memory: { type: 'boolean', default: false },
  },
});
const int = (name: string, v: string): number => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer, got "${v}"`);
  return n;
};

/** Top-level fields of a DiscoveryResponse without decoding its resources. */
function responseHeader(bytes: Uint8Array): { version: string; typeUrl: string; nonce: string } {
  const r = new BinaryReader(bytes);
  const out = { version: '', typeUrl: '', nonce: '' };
  while (r.pos < r.len) {
    const [no, wt] = r.tag();
    if (no === 1) out.version = r.string();
    else if (no === 4) out.typeUrl = r.string();
    else if (no === 5) out.nonce = r.string();
    else r.skip(wt as WireType);
  }
  return out;
}

/** An in-process SotW stream as grpc-js hands it to the server, driven by an Envoy-like client. */
class FakeStream extends EventEmitter {
  readonly names = new Map<string, string[]>();
  pending = 0;
  bytes = 0;
  responses = 0;
  #sentNode = false;

  constructor(
    private readonly plan: ProxyPlan,
    private readonly follow: boolean,
  ) {
    super();
  }

  getPeer(): string {
    return `in-process:${this.plan.pod}`;
  }

  write(bytes: Uint8Array, cb?: () => void): boolean {
    this.bytes += bytes.byteLength;
    this.responses++;
    this.pending++;
    // Deliver after the server's turn, as a socket would.
    setImmediate(() => {
      this.onResponse(bytes);
      this.pending--;
    });
    cb?.();
    return true;
  }

  end(): void {}

  request(typeUrl: string, version: string, nonce: string): void {
    const node = this.#sentNode
      ? undefined
      : {
          id: `sidecar~${this.plan.ip}~${this.plan.pod}.${this.plan.namespace}~${this.plan.namespace}.svc.cluster.local`,
          cluster: `${this.plan.labels?.app ?? this.plan.pod}.${this.plan.namespace}`,
          metadata: {
            NAMESPACE: this.plan.namespace,
            LABELS: { ...this.plan.labels },
            INSTANCE_IPS: this.plan.ip,
            CLUSTER_ID: 'Kubernetes',
            INTERCEPTION_MODE: 'REDIRECT',
          },
        };
    this.#sentNode = true;
    this.emit(
      'data',
      create(DiscoveryRequestSchema, {
        typeUrl,
        versionInfo: version,
        responseNonce: nonce,
        resourceNames: this.names.get(typeUrl) ?? [],
        ...(node ? { node: { id: node.id, cluster: node.cluster, metadata: node.metadata } as never } : {}),
      }),
    );
  }

  private onResponse(bytes: Uint8Array): void {
    const h = responseHeader(bytes);
    this.request(h.typeUrl, h.version, h.nonce);
    if (!this.follow) return;
    // While syncing, learn the names Envoy would subscribe to (decoded once per type here).
    const resp = fromBinary(DiscoveryResponseSchema, bytes);
    if (h.typeUrl === TypeUrl.Cluster) {
      const eds = resp.resources
        .map((a) => clusterEdsServiceName(a.value))
        .filter((n): n is string => n !== undefined)
        .sort();
      if (eds.join() !== (this.names.get(TypeUrl.ClusterLoadAssignment) ?? []).join()) {
        this.names.set(TypeUrl.ClusterLoadAssignment, eds);
        this.request(TypeUrl.ClusterLoadAssignment, '', '');
      }
    } else if (h.typeUrl === TypeUrl.Listener) {
      const rds = [...rdsNames(resp.resources.map((a) => fromBinary(ListenerSchema, a.value)))].sort();
      if (rds.join() !== (this.names.get(TypeUrl.RouteConfiguration) ?? []).join()) {
        this.names.set(TypeUrl.RouteConfiguration, rds);
        this.request(TypeUrl.RouteConfiguration, '', '');
      }
    }
  }
}

async function quiet(streams: readonly FakeStream[]): Promise<void> {
  // Idle: no response in flight for 100 ms (pushes are queued within the debounce's 1 ms).
  let calm = 0;
  while (calm < 5) {
    await new Promise((r) => setTimeout(r, 20));
    const busy = streams.some((s) => s.pending > 0);
    calm = busy ? 0 : calm + 1;
  }
}

const scenario = scenarioByName('http');
const mesh = new Mesh(
  {
    services: int('services', opt.services),
    namespaces: int('namespaces', opt.namespaces),
    instances: int('instances', opt.instances),
    sidecars: int('sidecars', opt.sidecars),
    proxyless: 0,
    routers: 0,
    restart: 0,
    sidecarScope: true,
  },
  scenario.ports,
);
const store = new ConfigStore({ logger: silentLogger });
const source = new MemorySource();
for (const docs of scenarioFiles(scenario, mesh).values())
  for (const d of docs) if (!source.upsert(d as never).ok) throw new Error('bench config invalid');
await source.start(store);
const generators = registerEnvoyGenerators(new GeneratorRegistry(), {
  logger: silentLogger,
  credentials: () => ({ get: () => undefined }),
});
let planMs = 0;
const logger = createLogger({
  level: 'info',
  sink: (line) => {
    const l = JSON.parse(line) as { msg?: string; planMs?: number };
    if (l.msg === 'push' && typeof l.planMs === 'number') planMs += l.planMs;
  },
});
const xds = new DiscoveryServer({
  generators,
  mesh: defaultMeshConfig(),
  snapshot: () => store.snapshot(),
  logger,
  debounce: { debounceAfter: 1, debounceMax: 50 },
  pushThrottle: 25,
});
store.onChange((events) => {
  // As src/bootstrap/discovery.ts does: a batch of WorkloadEntries only is an EDS update.
  const endpointsOnly = events.every((e) => e.key.kind === 'WorkloadEntry');
  xds.configUpdate(
    pushRequest({
      full: !endpointsOnly,
      configsUpdated: events.map((e) => configKeyString(e.key)),
      reason: endpointsOnly ? 'endpoint' : 'config',
      start: Date.now(),
    }),
  );
});
xds.start();

const plans = scenarioProxies(scenario, mesh).filter((p) => p.kind === 'sidecar');
const streams = plans.map((p) => new FakeStream(p, true));
const t = performance.now();
for (const s of streams) {
  xds.handleStream(s as unknown as AdsStream);
  s.request(TypeUrl.Cluster, '', '');
  s.request(TypeUrl.Listener, '', '');
}
await quiet(streams);
console.log(
  `push-path-bench: ${mesh.services.length} services, ${streams.length} sidecars (Sidecar per namespace), in-process streams; synced in ${((performance.now() - t) / 1000).toFixed(1)} s`,
);

if (opt.memory) reportMemory();

/** Heap after a full GC, and the encoded resource bytes the xDS cache holds by entry kind. */
function reportMemory(): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('--memory needs node --expose-gc');
  gc();
  gc();
  const mib = (n: number): string => (n / 1048576).toFixed(1);
  const m = process.memoryUsage();
  console.log(`memory after sync: rss ${mib(m.rss)} MiB, heap used ${mib(m.heapUsed)} MiB, array buffers ${mib(m.arrayBuffers)} MiB`);
  const seen = new Set<ArrayBufferLike>();
  const bytesOf = (v: unknown): number => {
    if (v instanceof Uint8Array) {
      if (seen.has(v.buffer)) return 0;
      seen.add(v.buffer);
      return v.buffer.byteLength;
    }
    if (Array.isArray(v)) return v.reduce((a: number, x) => a + bytesOf(x), 0);
    if (v !== null && typeof v === 'object' && 'any' in v && 'value' in v)
      return bytesOf((v as { any: unknown }).any) + bytesOf((v as { value: unknown }).value);
    return 0;
  };
  const byKind = new Map<string, { entries: number; bytes: number; deps: number }>();
  for (const [key, value, deps] of xds.cache.entriesForDebug()) {
    const kind = key.split('|').slice(0, 2).join('|');
    const k = byKind.get(kind) ?? { entries: 0, bytes: 0, deps: 0 };
    k.entries++;
    k.bytes += bytesOf(value);
    k.deps += deps.length;
    byKind.set(kind, k);
  }
  console.log('cache entry kind              entries  encoded MiB  dependencies');
  for (const [kind, k] of [...byKind].sort((a, b) => b[1].bytes - a[1].bytes)) {
    console.log(
      `${kind.slice(0, 28).padEnd(28)}  ${String(k.entries).padStart(7)}  ${mib(k.bytes).padStart(11)}  ${String(k.deps).padStart(12)}`,
    );
  }
}

interface Step {
  readonly name: string;
  apply(round: number): void;
}
const target = mesh.target;
const extra = mesh.extraEndpoint();
const steps: Step[] = [
  {
    name: 'VirtualService edit',
    apply: () => {
      for (const d of scenario.routeEdit?.(mesh, target, marker()).docs ?? []) source.upsert(d as never);
    },
  },
  { name: 'endpoint added', apply: () => source.upsert(extra.doc as never) },
  { name: 'endpoint removed', apply: () => source.delete({ kind: 'WorkloadEntry', namespace: target.ns, name: `${target.name}-extra` }) },
  {
    name: 'PeerAuthentication',
    apply: (round) => source.upsert(mesh.peerAuthentication(target.ns, round % 2 === 0 ? 'STRICT' : 'PERMISSIVE') as never),
  },
];
for (const s of streams) s.responses = 0;
console.log('step                    round  cpu-ms  plan-ms  pushed  responses  KiB');
for (let round = 0; round < int('rounds', opt.rounds); round++) {
  for (const step of steps) {
    const bytes0 = streams.reduce((a, s) => a + s.bytes, 0);
    const plan0 = planMs;
    for (const s of streams) s.responses = 0;
    const cpu0 = process.cpuUsage();
    step.apply(round);
    await quiet(streams);
    const cpu = process.cpuUsage(cpu0);
    const pushed = streams.filter((s) => s.responses > 0).length;
    const responses = streams.reduce((a, s) => a + s.responses, 0);
    const kib = (streams.reduce((a, s) => a + s.bytes, 0) - bytes0) / 1024;
    console.log(
      `${step.name.padEnd(22)}  ${String(round).padStart(5)}  ${((cpu.user + cpu.system) / 1000).toFixed(0).padStart(6)}  ${(planMs - plan0).toFixed(1).padStart(7)}  ${String(pushed).padStart(6)}  ${String(responses).padStart(9)}  ${kib.toFixed(0)}`,
    );
  }
}
await xds.stop();
