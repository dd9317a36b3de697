/**
 * Fixtures for the Envoy ⇄ proxyless gRPC parity e2e test: one config directory of Istio YAML,
 * gRPC backends that also serve a second method path and can fail every other call, and the
 * config each kind of client would receive from the same PushContext.
 */
import * as grpc from '@grpc/grpc-js';
import { fromBinary } from '@bufbuild/protobuf';
import { anyUnpack } from '@bufbuild/protobuf/wkt';
import { ClusterSchema, type Cluster } from '../../src/gen/envoy/config/cluster/v3/cluster_pb.js';
import { ListenerSchema, type Listener } from '../../src/gen/envoy/config/listener/v3/listener_pb.js';
import type { HeaderMatcher } from '../../src/gen/envoy/config/route/v3/route_components_pb.js';
import { RouteConfigurationSchema, type RouteConfiguration } from '../../src/gen/envoy/config/route/v3/route_pb.js';
import { HttpConnectionManagerSchema } from '../../src/gen/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager_pb.js';
import type { PushContext } from '../../src/model/push-context.js';
import type { Proxy } from '../../src/model/proxy.js';
import { pushRequest } from '../../src/model/push-request.js';
import type { GeneratorRegistry } from '../../src/xds/generator.js';
import { TypeUrl } from '../../src/xds/type-urls.js';
import { WHOAMI_PATH, type WhoamiReply } from './grpc-backend.js';
import { dest, destinationRule, serviceEntry, virtualService, workloadEntry, type IstioDoc } from './mesh-fixtures.js';
import type { Tally } from './xds-client.js';

export const HOST = 'echo.default.svc.cluster.local';
export const PORT = 8080;
/** The ServiceEntry VIP: gives sidecars a per-port outbound listener `10.0.5.5_8080`. */
export const VIP = '10.0.5.5';
/** A second method every parity backend serves, for path-based routing. */
export const CANARY_PATH = '/echo.Canary/Whoami';

/** The DestinationRule's outlier detection (every subset inherits it). */
export const OUTLIER = { consecutive5xxErrors: 7, interval: '15s', baseEjectionTime: '45s', maxEjectionPercent: 40 } as const;
export const STICKY_LB = { consistentHash: { httpHeaderName: 'x-user' } } as const;

export interface ParityBackend {
  readonly name: string;
  /** WorkloadEntry `role` label: `stable` (subsets v1-v3), `flaky`, or `ring` (the sticky subset). */
  readonly role: string;
  readonly port: number;
  /** RPCs that reached this backend (failed attempts included). */
  hits(): number;
  stop(): Promise<void>;
}

const identity = (b: Buffer): Buffer => b;
const method = (path: string): grpc.MethodDefinition<Buffer, Buffer> => ({
  path,
  requestStream: false,
  responseStream: false,
  requestSerialize: identity,
  requestDeserialize: identity,
  responseSerialize: identity,
  responseDeserialize: identity,
});

/**
 * A real gRPC server on 127.0.0.1 answering Whoami (both paths) with its name. Role `flaky`: every odd
 * hit (1st, 3rd, …) fails with UNAVAILABLE, so sequential single-attempt calls alternate while a
 * client that retries once succeeds every time.
 */
export async function startParityBackend(name: string, role: 'stable' | 'flaky' | 'ring' = 'stable'): Promise<ParityBackend> {
  const server = new grpc.Server();
  let hits = 0;
  const handler = (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>): void => {
    hits++;
    if (role === 'flaky' && hits % 2 === 1) {
      cb({ code: grpc.status.UNAVAILABLE, details: `${name}: failing attempt ${hits}` });
      return;
    }
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(call.metadata.getMap())) if (typeof v === 'string') headers[k] = v;
    const reply: WhoamiReply = { backend: name, headers };
    cb(null, Buffer.from(JSON.stringify(reply)));
  };
  server.addService({ Whoami: method(WHOAMI_PATH), Canary: method(CANARY_PATH) }, { Whoami: handler, Canary: handler });
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p)));
  });
  return {
    name,
    role,
    port,
    hits: () => hits,
    stop: () =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, 2000);
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      }),
  };
}

/** The one set of YAML both sides are generated from, as `file → documents`. */
export function parityConfig(backends: readonly ParityBackend[]): Map<string, IstioDoc[]> {
  const se = serviceEntry('echo', { host: HOST, port: PORT, selector: { app: 'echo' } });
  const files = new Map<string, IstioDoc[]>();
  files.set('service-entry.yaml', [{ ...se, spec: { ...se.spec, addresses: [VIP] } }]);
  files.set(
    'workloads.yaml',
    backends.map((b) =>
      workloadEntry(`echo-${b.name}`, {
        port: b.port,
        labels: { app: 'echo', version: b.name, role: b.role },
      }),
    ),
  );
  const dr = destinationRule('echo', {
    host: HOST,
    trafficPolicy: { outlierDetection: OUTLIER },
    subsets: { v1: { version: 'v1' }, v2: { version: 'v2' }, v3: { version: 'v3' }, flaky: { role: 'flaky' }, sticky: { role: 'ring' } },
  });
  // The sticky subset (its own backends, see the test) hashes on x-user.
  const subsets = (dr.spec.subsets as { name: string }[]).map((s) =>
    s.name === 'sticky' ? { ...s, trafficPolicy: { loadBalancer: STICKY_LB } } : s,
  );
  files.set('destination-rule.yaml', [{ ...dr, spec: { ...dr.spec, subsets } }]);
  files.set('virtual-service.yaml', [
    virtualService('echo', {
      hosts: [HOST],
      http: [
        {
          name: 'fault-grpc',
          match: [{ headers: { 'x-fault': { exact: 'grpc' } } }],
          fault: { abort: { grpcStatus: 'PERMISSION_DENIED', percentage: { value: 100 } } },
          route: [dest(HOST, 'v1')],
        },
        {
          name: 'fault-http',
          match: [{ headers: { 'x-fault': { exact: 'http' } } }],
          fault: { abort: { httpStatus: 503, percentage: { value: 100 } } },
          route: [dest(HOST, 'v1')],
        },
        { name: 'by-header', match: [{ headers: { 'x-version': { exact: 'v3' } } }], route: [dest(HOST, 'v3')] },
        { name: 'by-path', match: [{ uri: { exact: CANARY_PATH } }], route: [dest(HOST, 'v2')] },
        { name: 'sticky', match: [{ headers: { 'x-sticky': { exact: 'yes' } } }], route: [dest(HOST, 'sticky')] },
        {
          name: 'retry',
          match: [{ headers: { 'x-route': { exact: 'flaky' } } }],
          route: [dest(HOST, 'flaky')],
          retries: { attempts: 3, retryOn: 'unavailable' },
        },
        {
          name: 'no-retry',
          match: [{ headers: { 'x-route': { exact: 'flaky-no-retry' } } }],
          route: [dest(HOST, 'flaky')],
          retries: { attempts: 0 },
        },
        { name: 'split', route: [dest(HOST, 'v1', 70), dest(HOST, 'v2', 30)] },
      ],
    }),
  ]);
  files.set('authorization-policy.yaml', [
    {
      apiVersion: 'security.istio.io/v1',
      kind: 'AuthorizationPolicy',
      metadata: { name: 'echo-deny-mallory', namespace: 'default' },
      spec: {
        selector: { matchLabels: { app: 'echo' } },
        action: 'DENY',
        rules: [{ to: [{ operation: { paths: ['/echo.Echo/*'] } }], when: [{ key: 'request.headers[x-caller]', values: ['mallory'] }] }],
      },
    },
  ]);
  return files;
}

/** `outbound|8080|v3|echo…` → `v3` (the backend version that subset selects). */
export function subsetOf(cluster: string | undefined): string | undefined {
  return cluster?.split('|')[2];
}

const clients = new Map<string, grpc.Client>();

/** `n` calls to `path` on `target`, `concurrency` in flight (1 = strictly sequential). */
export async function callPath(
  target: string,
  path: string,
  n: number,
  opts: { metadata?: Record<string, string>; concurrency?: number } = {},
): Promise<Tally> {
  let c = clients.get(target);
  if (!c) clients.set(target, (c = new grpc.Client(target, grpc.credentials.createInsecure())));
  const client = c;
  const counts: Record<string, number> = {};
  const errors: Record<number, number> = {};
  const details = new Set<string>();
  const one = (): Promise<void> =>
    new Promise((resolve) => {
      const md = new grpc.Metadata();
      for (const [k, v] of Object.entries(opts.metadata ?? {})) md.set(k, v);
      client.makeUnaryRequest<Buffer, Buffer>(
        path,
        identity,
        identity,
        Buffer.alloc(0),
        md,
        { deadline: Date.now() + 5000 },
        (err, res) => {
          if (err) {
            errors[err.code] = (errors[err.code] ?? 0) + 1;
            details.add(`${err.code} ${err.details}`);
          } else {
            const b = (JSON.parse((res ?? Buffer.alloc(0)).toString('utf8')) as WhoamiReply).backend;
            counts[b] = (counts[b] ?? 0) + 1;
          }
          resolve();
        },
      );
    });
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < n) {
      next++;
      await one();
    }
  };
  await Promise.all(Array.from({ length: Math.min(opts.concurrency ?? 20, n) }, worker));
  return { total: n, counts, errors, errorDetails: [...details] };
}

export function closeParityClients(): void {
  for (const c of clients.values()) c.close();
  clients.clear();
}

/** What a proxyless client dialling `xds:///<target>` receives: LDS, the RDS it names, its clusters. */
export interface ProxylessConfig {
  readonly listener: Listener;
  readonly route: RouteConfiguration;
  readonly clusters: Cluster[];
}

/** The clusters a route configuration refers to (single and weighted). */
export function routeClusters(rc: RouteConfiguration): string[] {
  const names = new Set<string>();
  for (const vh of rc.virtualHosts) {
    for (const r of vh.routes) {
      if (r.action.case !== 'route') continue;
      const spec = r.action.value.clusterSpecifier;
      if (spec.case === 'cluster') names.add(spec.value);
      if (spec.case === 'weightedClusters') for (const w of spec.value.clusters) names.add(w.name);
    }
  }
  return [...names].sort();
}

/**
 * Runs the grpc generators the way grpc-js-xds subscribes (named resources only): the target as
 * the Listener name, then the RDS name its HCM carries, then every cluster the routes use.
 */
export function proxylessConfig(push: PushContext, generators: GeneratorRegistry, proxy: Proxy, target: string): ProxylessConfig {
  const req = pushRequest({ full: true, reason: 'config', start: 0 });
  const run = (typeUrl: string, names: string[]): Uint8Array[] => {
    const gen = generators.lookup(proxy, typeUrl);
    if (!gen) throw new Error(`no generator for ${typeUrl}`);
    return gen.generate(proxy, { typeUrl, names: new Set(names), wildcard: false }, push, req).map((r) => r.value);
  };
  const [lds] = run(TypeUrl.Listener, [target]);
  if (!lds) throw new Error(`no proxyless listener ${target}`);
  const listener = fromBinary(ListenerSchema, lds);
  const api = listener.apiListener?.apiListener;
  const hcm = api ? anyUnpack(api, HttpConnectionManagerSchema) : undefined;
  if (hcm?.routeSpecifier.case !== 'rds') throw new Error(`listener ${target} has no RDS`);
  const [rds] = run(TypeUrl.RouteConfiguration, [hcm.routeSpecifier.value.routeConfigName]);
  if (!rds) throw new Error(`no proxyless route ${hcm.routeSpecifier.value.routeConfigName}`);
  const route = fromBinary(RouteConfigurationSchema, rds);
  const clusters = run(TypeUrl.Cluster, routeClusters(route)).map((b) => fromBinary(ClusterSchema, b));
  return { listener, route, clusters };
}

/** A route reduced to what both clients act on, with header matchers in one spelling. */
export interface RouteSummary {
  readonly name: string;
  readonly path: string;
  readonly headers: string[];
  readonly clusters: string[];
  readonly retry: string | undefined;
  readonly hash: string[];
  /** The per-route fault filter config, hex-encoded (byte-equal on both sides or not at all). */
  readonly fault: string | undefined;
}

/** `name kind=value`: the legacy `exact_match` and the newer `string_match.exact` read the same. */
function headerSummary(h: HeaderMatcher): string {
  const s = h.headerMatchSpecifier;
  let kind: string = s.case ?? 'any';
  let value: unknown = s.value;
  if (s.case === 'stringMatch') ({ kind, value } = { kind: s.value.matchPattern.case ?? 'any', value: s.value.matchPattern.value });
  else kind = kind.replace(/Match$/, '');
  if (value !== null && typeof value === 'object' && 'regex' in value) value = value.regex;
  return `${h.name} ${kind}=${String(value)}${h.invertMatch ? ' (inverted)' : ''}`;
}

export function summarizeRoutes(rc: RouteConfiguration, vhostName: string): RouteSummary[] {
  const vh = rc.virtualHosts.find((v) => v.name === vhostName);
  if (!vh) throw new Error(`${rc.name}: no virtual host ${vhostName}`);
  return vh.routes.map((r) => {
    const a = r.action.case === 'route' ? r.action.value : undefined;
    const spec = a?.clusterSpecifier;
    const rp = a?.retryPolicy;
    const fault = r.typedPerFilterConfig['envoy.filters.http.fault'];
    return {
      name: r.name,
      path: `${r.match?.pathSpecifier.case ?? 'none'}=${String(r.match?.pathSpecifier.value)}`,
      headers: (r.match?.headers ?? []).map(headerSummary),
      clusters:
        spec?.case === 'cluster'
          ? [spec.value]
          : spec?.case === 'weightedClusters'
            ? spec.value.clusters.map((w) => `${w.name}@${w.weight}`)
            : [],
      retry: rp ? `${rp.retryOn} x${rp.numRetries}` : undefined,
      hash: (a?.hashPolicy ?? []).map(
        (h) => `${h.policySpecifier.case ?? 'none'}:${h.policySpecifier.case === 'header' ? h.policySpecifier.value.headerName : '?'}`,
      ),
      fault: fault ? Buffer.from(fault.value).toString('hex') : undefined,
    };
  });
}
