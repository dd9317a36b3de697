/**
 * An in-process DiscoveryServer with meshpilot's real generators (Envoy, proxyless gRPC, debug
 * types) over a real gRPC server on loopback, serving a small mesh; every response it writes is
 * counted per connection (the push-loop property) and its log lines are kept.
 */
import * as grpc from '@grpc/grpc-js';
import { configKeyString } from '../../../src/config/config.js';
import { ConfigStore } from '../../../src/config/store.js';
import { validateObject } from '../../../src/config/validation/index.js';
import type { ConfigChange } from '../../../src/config/store-types.js';
import { defaultMeshConfig } from '../../../src/config/mesh/mesh-config.js';
import { pushRequest } from '../../../src/model/push-request.js';
import { registerEnvoyGenerators } from '../../../src/networking/envoy-generators.js';
import { configCredentials } from '../../../src/networking/gateway/config-credentials.js';
import { registerGrpcGenerators } from '../../../src/networking/grpc/grpc-generators.js';
import { createLogger, silentLogger } from '../../../src/util/log.js';
import { adsImplementation, adsServiceDefinition } from '../../../src/xds/ads-service.js';
import type { Connection } from '../../../src/xds/connection.js';
import { registerDebugGenerators } from '../../../src/xds/debug/debug-generators.js';
import { DiscoveryServer } from '../../../src/xds/discovery-server.js';
import { createObservability } from '../../../src/xds/debug/observability.js';
import type { PropagationTracker } from '../../../src/xds/debug/propagation-tracker.js';
import { createStreamGate, type StreamGate } from '../../../src/xds/stream-limiter.js';
import { GeneratorRegistry } from '../../../src/xds/generator.js';
import { destinationRule, dest, serviceEntry, virtualService, workloadEntry } from '../mesh-fixtures.js';

export interface FuzzXdsServer {
  readonly addr: string;
  readonly xds: DiscoveryServer;
  readonly store: ConfigStore;
  /** Responses written per connection id (SotW and Delta). */
  readonly responses: Map<string, number>;
  /** Warn and error lines the server logged. */
  readonly problems: Record<string, unknown>[];
  /** Push status tracking and the admission gate, as `meshpilot discovery` wires them (option `asShipped`). */
  readonly tracker?: PropagationTracker;
  readonly gate?: StreamGate;
  /** A real config change (a new ServiceEntry); returns its host. */
  change(tag: string): string;
  /** A debounced full push with no config change behind it. */
  pushNothing(): void;
  connection(podPrefix: string): Connection | undefined;
  stop(): Promise<void>;
}

const MESH = [
  serviceEntry('echo', { host: 'echo.default.svc.cluster.local', selector: { app: 'echo' } }),
  serviceEntry('other', { host: 'other.prod.svc.cluster.local', namespace: 'prod', port: 9090, selector: { app: 'other' } }),
  workloadEntry('echo-1', { port: 9001, labels: { app: 'echo', version: 'v1' } }),
  workloadEntry('other-1', { port: 9002, namespace: 'prod', address: '127.0.0.2', labels: { app: 'other' } }),
  destinationRule('echo', { host: 'echo.default.svc.cluster.local', subsets: { v1: { version: 'v1' } } }),
  virtualService('echo', {
    hosts: ['echo.default.svc.cluster.local'],
    http: [
      { match: [{ uri: { regex: '/api/v[0-9]+' } }], route: [dest('echo.default.svc.cluster.local', 'v1')] },
      { route: [dest('echo.default.svc.cluster.local')] },
    ],
  }),
];

function upserts(docs: readonly unknown[]): ConfigChange[] {
  return docs.map((d) => {
    const r = validateObject(d as Record<string, unknown>, { file: 'fuzz-mesh' });
    if (!r.ok) throw new Error(`fuzz mesh object invalid: ${JSON.stringify(r.errors)}`);
    return { type: 'upsert', config: r.value };
  });
}

export interface FuzzXdsServerOptions {
  /**
   * A store that something else fills (a FileSource): its changes are pushed as meshpilot's
   * bootstrap pushes them. Without it, a store with a small fixed mesh.
   */
  readonly store?: ConfigStore;
  /** DiscoveryServer's sendTimeoutMs (default: none). */
  readonly sendTimeoutMs?: number;
  /** Also the metrics and push-status observers and the stream admission gate of `meshpilot discovery`. */
  readonly asShipped?: boolean;
}

export async function startFuzzXdsServer(opts: FuzzXdsServerOptions = {}): Promise<FuzzXdsServer> {
  const store = opts.store ?? new ConfigStore();
  if (!opts.store) store.apply(upserts(MESH));
  const responses = new Map<string, number>();
  const problems: Record<string, unknown>[] = [];
  const logger = createLogger({
    level: 'warn',
    sink: (line) => {
      if (problems.length >= 10_000) return;
      // Fields shortened: a client's 1 MiB type URL must not stay alive in this test log.
      const entry = JSON.parse(line) as Record<string, unknown>;
      for (const [k, v] of Object.entries(entry))
        if (typeof v === 'string' && v.length > 200) entry[k] = Buffer.from(`${v.slice(0, 200)}…`).toString(); // a copy: a slice keeps its parent alive
      problems.push(entry);
    },
  });
  const generators = registerEnvoyGenerators(registerGrpcGenerators(new GeneratorRegistry()), {
    logger: silentLogger,
    credentials: (p) => configCredentials(p.config, silentLogger),
  });
  const observability = opts.asShipped ? createObservability({ logger: silentLogger }) : undefined;
  const xds = new DiscoveryServer({
    generators,
    mesh: defaultMeshConfig(),
    snapshot: () => store.snapshot(),
    logger,
    debounce: { debounceAfter: 5, debounceMax: 50 },
    pushThrottle: 10,
    ...(opts.sendTimeoutMs !== undefined ? { sendTimeoutMs: opts.sendTimeoutMs } : {}),
    observers: [
      { responseSent: (conn) => void responses.set(conn.id, (responses.get(conn.id) ?? 0) + 1) },
      ...(observability?.observers ?? []),
    ],
  });
  observability?.attach(xds);
  registerDebugGenerators(generators, xds);
  xds.start();
  const unsubscribe = store.onChange((events) =>
    xds.configUpdate(
      pushRequest({ full: true, configsUpdated: events.map((e) => configKeyString(e.key)), reason: 'config', start: Date.now() }),
    ),
  );
  const server = new grpc.Server();
  const gate = opts.asShipped ? createStreamGate({ maxRequestsPerSecond: 1000, maxWarming: 100, logger: silentLogger }) : undefined;
  server.addService(adsServiceDefinition, gate ? gate.wrapService(adsServiceDefinition, adsImplementation(xds)) : adsImplementation(xds));
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  return {
    addr: `127.0.0.1:${port}`,
    xds,
    store,
    responses,
    problems,
    ...(observability ? { tracker: observability.tracker } : {}),
    ...(gate ? { gate } : {}),
    change(tag) {
      const host = `added-${tag}.default.svc.cluster.local`;
      store.apply(upserts([serviceEntry(`added-${tag}`, { host, selector: { app: 'echo' } })])); // pushed by onChange
      return host;
    },
    pushNothing() {
      xds.configUpdate(pushRequest({ full: true, reason: 'config', start: Date.now() }));
    },
    connection(podPrefix) {
      return xds.connectionList().find((c) => c.proxy.podName.startsWith(`${podPrefix}.`) || c.proxy.id.includes(`~${podPrefix}.`));
    },
    async stop() {
      unsubscribe();
      await xds.stop();
      server.forceShutdown();
    },
  };
}
