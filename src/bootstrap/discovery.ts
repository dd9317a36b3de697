import * as grpc from '@grpc/grpc-js';
import { Registry } from 'prom-client';
import { existsSync } from 'node:fs';
import path from 'node:path';
import {
  CA_KEY_FILE,
  authorizeProxy,
  nodePlacement,
  startSecureGrpc,
  type PodPlacements,
  type Authenticator,
  type IstioCa,
  type RunningSecureGrpc,
  type SecureService,
} from '../security/index.js';
import type { Server as HttpServer } from 'node:http';
import { configKeyString, ConfigStore, FileSource, type ConfigSource, type MeshConfig } from '../config/index.js';
import { pushRequest, type NetworkSettings } from '../model/index.js';
import {
  registerEnvoyGenerators,
  configCredentials,
  DEFAULT_CLUSTER_ID,
  registerGrpcGenerators,
  registerZtunnelGenerators,
} from '../networking/index.js';
import {
  guardCredentials,
  registerDebugGenerators,
  xdsDebugAccess,
  createObservability,
  createStreamGate,
  type StreamGateStats,
  DiscoveryServer,
  GeneratorRegistry,
} from '../xds/index.js';
import type { Logger } from '../util/log.js';
import { adsImplementation, adsServiceDefinition } from '../xds/ads-service.js';
import { TypeUrl } from '../xds/type-urls.js';
import { packageVersion } from '../util/version.js';
import type { KubeCluster } from './kube-side.js';
import type { ClusterDebugInfo, RemoteClusters } from './remote-clusters.js';
import { loadMeshConfig } from './mesh-config.js';
import { GatewayNames } from './gateway-names.js';
import { NetworkWatch } from './mesh-networks.js';
import { debugHandlers, guardHandlers } from './debug-handlers.js';
import { ConsoleHub } from './console/console-hub.js';
import { consoleRoutes } from './console/console-routes.js';
import type { ConfigAnalysis, ConfigAnalyzer } from './console/health-view.js';
import { startHttpServer, type Handler } from './http-server.js';
import { shutdownGrpc, type ShutdownSummary } from './lifecycle.js';
import { parseListenAddress, type DiscoveryOptions } from './options.js';
import { startSingletons } from './singletons.js';
import { countObjects, startupSummary } from './startup-summary.js';
import { startWebhooks } from './webhooks.js';
import { shrinkYoungGenerationWhenQuiet } from './young-generation.js';
import { workloadEntries } from './workload-entries.js';
import { ISTIO_SYSTEM_NAMESPACE } from '../config/constants.js';

export interface RunningDiscovery {
  readonly grpcAddress: string;
  readonly httpAddress: string;
  readonly monitoringAddress: string;
  /** `host:port` of the TLS xDS + CA server, when enabled (--secureGRPCAddr). */
  readonly secureGrpcAddress: string | undefined;
  /** The CA behind it (undefined when the secure server is disabled). */
  readonly ca: IstioCa | undefined;
  /** `host:port` of the HTTPS admission webhook server (--httpsAddr), when it runs (it needs the CA). */
  readonly webhookAddress: string | undefined;
  readonly xds: DiscoveryServer;
  readonly store: ConfigStore;
  /** Stream admission counters (rate limit, drain). */
  streamStats(): StreamGateStats;
  /** Graceful shutdown within opts.shutdownDurationMs (see lifecycle.ts). Idempotent. */
  stop(): Promise<ShutdownSummary>;
}

/**
 * grpc-js server options from the parsed limits. Keepalive: grpc-js servers do not police client
 * pings (no too_many_pings GOAWAY; istiod's Go server allows one every keepaliveInterval/2, which
 * Envoy's defaults respect), so there is no enforcement option to relax. Max connection age: grpc-js
 * adds ±10% jitter itself, as grpc-go does, so proxies spread across replicas on reconnect.
 */
export function grpcServerOptions(opts: DiscoveryOptions): grpc.ServerOptions {
  return {
    // No channelz service is served: its bookkeeping (a timestamp and counters per message, a
    // wrapper per stream) was ~2 % of the CPU a mesh-wide push costs.
    'grpc.enable_channelz': 0,
    'grpc.max_receive_message_length': opts.maxRecvMsgSize,
    'grpc.max_concurrent_streams': opts.maxConcurrentStreams,
    'grpc.keepalive_time_ms': opts.keepaliveIntervalMs,
    'grpc.keepalive_timeout_ms': opts.keepaliveTimeoutMs,
    ...(Number.isFinite(opts.maxServerConnectionAgeMs)
      ? {
          'grpc.max_connection_age_ms': opts.maxServerConnectionAgeMs,
          'grpc.max_connection_age_grace_ms': opts.maxServerConnectionAgeGraceMs,
        }
      : {}),
  };
}

/** What the command line adds to the control plane from layers bootstrap may not import. */
export interface DiscoveryExtras {
  /**
   * `meshctl analyze` over --configDir, for the web console's config health (the analyzers live
   * with meshctl, a peer of bootstrap in scripts/layers.ts, so the CLI hands them in).
   */
  readonly analyzeConfigDir?: (dir: string, rootNamespace: string) => Promise<ConfigAnalysis>;
}

/**
 * `meshpilot discovery`: config directory → store → DiscoveryServer → gRPC ADS, plus the HTTP
 * servers. /ready turns 200 once the first load has been applied and the first PushContext built.
 */
export async function startDiscovery(opts: DiscoveryOptions, log: Logger, extras: DiscoveryExtras = {}): Promise<RunningDiscovery> {
  // The Kubernetes side (and its client library) is loaded only with a cluster.
  const kube = opts.cluster ? await import('./kube-side.js') : undefined;
  const parts = kube?.connectCluster(opts, log);
  const cluster: KubeCluster | undefined = kube && parts ? { ...parts, kube } : undefined;
  const meshFile = await loadMeshConfig(opts, cluster?.meshConfigMap);
  const networkWatch = new NetworkWatch({
    file: opts.meshNetworksFile,
    cluster: cluster
      ? cluster.kube.clusterNetworkSource({
          kubeConfig: cluster.kubeConfig,
          namespace: opts.security.namespace,
          logger: log.child('networks'),
        })
      : undefined,
    clusterId: opts.cluster?.clusterId ?? DEFAULT_CLUSTER_ID,
    kubernetes: cluster !== undefined && opts.registries.includes('Kubernetes'),
    gatewayApi: opts.multiNetworkGatewayApi,
    logger: log.child('networks'),
  });
  const networks = await networkWatch.start();
  // Gateways named by a host name: resolved here, their addresses handed to the server with the networks.
  let onGatewayNames = (): void => {};
  const gatewayNames = opts.resolveHostnameGateways
    ? new GatewayNames({
        logger: log.child('networks'),
        onChange: () => onGatewayNames(),
        ...(opts.gatewayDnsServers.length > 0 ? { servers: opts.gatewayDnsServers } : {}),
      })
    : undefined;
  const withGatewayNames = (s: NetworkSettings): NetworkSettings => (gatewayNames ? { ...s, gatewayNames: gatewayNames.current() } : s);
  const mesh = meshFile.mesh;
  if (meshFile.ignoredFields.length > 0) log.info('mesh config fields not used by meshpilot', { fields: meshFile.ignoredFields });
  const store = new ConfigStore({ logger: log.child('config') });
  const sources: ConfigSource[] = [];
  if (opts.configDir !== undefined) sources.push(new FileSource({ dir: opts.configDir, logger: log.child('file') }));
  const watchers = cluster ? cluster.kube.clusterWatchers(opts, cluster.kubeConfig, meshFile, log) : undefined;
  if (watchers) sources.push(watchers.source);
  const kubeRegistry = watchers?.registry;
  const credentialLog = log.child('credentials');
  const generators = registerEnvoyGenerators(registerGrpcGenerators(new GeneratorRegistry(), { logger: log.child('grpc') }), {
    logger: log.child('envoy'),
    credentials: (push) => configCredentials(push.config, credentialLog),
  });
  if (opts.ambient) registerZtunnelGenerators(generators, { clusterId: opts.cluster?.clusterId ?? DEFAULT_CLUSTER_ID });
  // istiod's words (registerAmbient): the setting has no effect without ambient.
  for (const name of opts.ignoredAmbientSettings) log.warn(`ignoring ${name}; requires PILOT_ENABLE_AMBIENT=true`);
  const observability = createObservability({ logger: log.child('propagation') });
  // The process's metrics: the xDS server's, the webhooks', the CA's, all on one registry.
  const metrics = new Registry();
  const autoRegistration = workloadEntries(opts, store, cluster, metrics, log.child('wle'));
  if (autoRegistration?.source) sources.push(autoRegistration.source);
  const xds = new DiscoveryServer({
    metrics,
    // Each push may name other gateway host names (a gateway Service or meshNetworks changed).
    observers: [...observability.observers, { pushStarted: () => gatewayNames?.watch(xds.push().networkGateways.hostnames) }],
    generators,
    mesh,
    networks: withGatewayNames(networks),
    snapshot: () => store.snapshot(),
    // The local cluster first, then the remote ones (istiod's registry order): a hostname in several merges.
    ...(kubeRegistry ? { registries: () => [kubeRegistry.snapshot(), ...(remotes?.snapshots() ?? [])] } : {}),
    clusterId: opts.cluster?.clusterId ?? DEFAULT_CLUSTER_ID,
    ztunnelDryRunPolicies: opts.ambientDryRunAuthorizationPolicy,
    dualStack: opts.dualStack,
    ambient: opts.ambient,
    logger: log.child('ads'),
    authorize: (call, proxy) =>
      // istiod registers ztunnel's types only with ambient on; an empty answer would read as an empty mesh.
      !opts.ambient && proxy.type === 'ztunnel' ? 'ztunnel requires PILOT_ENABLE_AMBIENT=true' : authorizeProxy(call, proxy),
    debounce: { debounceAfter: opts.debounceAfterMs, debounceMax: opts.debounceMaxMs, enableEDSDebounce: opts.enableEdsDebounce },
    pushThrottle: opts.pushThrottle,
    cacheSize: opts.xdsCacheSize,
    sendTimeoutMs: opts.xdsSendTimeoutMs,
    ...(autoRegistration ? { workloads: autoRegistration.controller } : {}),
  });
  observability.attach(xds);
  // Multicluster: remote clusters from `istio/multiCluster` Secrets, with the local Kubernetes registry.
  const remotes: RemoteClusters | undefined =
    cluster && kubeRegistry
      ? cluster.kube.remoteClusters(opts, cluster.kubeConfig, meshFile, xds, () => store.snapshot(), metrics, log)
      : undefined;
  let localSynced = false;
  const clusterz = (): ClusterDebugInfo[] => [
    { id: opts.cluster?.clusterId ?? DEFAULT_CLUSTER_ID, secretName: '', syncStatus: localSynced ? 'synced' : 'syncing' },
    ...(remotes?.debugInfo() ?? []),
  ];
  // Debug state goes to loopback or authenticated callers (istiod's system namespace = the mesh root namespace).
  const systemNamespace = mesh.rootNamespace || ISTIO_SYSTEM_NAMESPACE;
  registerDebugGenerators(generators, xds, {
    access: xdsDebugAccess(systemNamespace),
    logger: log.child('debug'),
    clusterId: opts.cluster?.clusterId ?? DEFAULT_CLUSTER_ID,
  });
  // Better not to start than to hand gateway keys to anyone who asks (the generator key moved?).
  if (!generators.wrap(`router/${TypeUrl.Secret}`, (g) => guardCredentials(g, credentialLog)))
    throw new Error(`no router/${TypeUrl.Secret} generator to guard`);
  let debugAuthenticators: readonly Authenticator[] = [];
  let ready = false;
  let stopping: Promise<ShutdownSummary> | undefined;
  const http: HttpServer[] = [];

  const versionHandler: Handler = () => ({ status: 200, body: `${packageVersion()}\n` });
  const readyHandler: Handler = () =>
    ready
      ? { status: 200, body: 'ready\n' }
      : { status: 503, body: stopping ? 'not ready: shutting down\n' : 'not ready: initial config load in progress\n' };
  const debugAccess = { systemNamespace, authenticators: () => debugAuthenticators, logger: log.child('debug') };
  const debug = debugHandlers({
    xds,
    store,
    generators,
    tracker: observability.tracker,
    ...(cluster ? { clusters: clusterz } : {}),
    access: debugAccess,
  });
  const configDir = opts.configDir;
  const analyze: ConfigAnalyzer | undefined =
    extras.analyzeConfigDir && configDir !== undefined ? () => extras.analyzeConfigDir!(configDir, systemNamespace) : undefined;
  // The web console on the HTTP (debug) port, behind the debug endpoints' access rule.
  const consoleHub = new ConsoleHub({
    xds,
    tracker: observability.tracker,
    volume: observability.volume,
    store,
    ...(analyze ? { analyze } : {}),
    logger: log.child('console'),
  });
  const webConsole = guardHandlers(consoleRoutes(consoleHub), xds, debugAccess);
  const httpListen = parseListenAddress(opts.httpAddr, '--httpAddr');
  // /version on both ports: the debug port is the one a port-forward to istiod usually reaches.
  const httpServer = await startHttpServer(
    httpListen.host,
    httpListen.port,
    new Map([['/ready', readyHandler], ['/version', versionHandler], ...debug, ...webConsole]),
    log,
    'http',
  );
  http.push(httpServer.server);
  const monListen = parseListenAddress(opts.monitoringAddr, '--monitoringAddr');
  const metricsHandler: Handler = async () => ({ status: 200, body: await metrics.metrics(), contentType: metrics.contentType });
  const monServer = await startHttpServer(
    monListen.host,
    monListen.port,
    new Map([['/ready', readyHandler], ['/metrics', metricsHandler], ['/version', versionHandler], ...debug]),
    log,
    'monitoring',
  );
  http.push(monServer.server);

  await Promise.all([
    ...sources.map((s) => s.start(store)),
    kubeRegistry?.start().then(() => {
      localSynced = true;
    }),
    remotes?.start(),
  ]);
  xds.start();
  gatewayNames?.watch(xds.push().networkGateways.hostnames);
  autoRegistration?.controller.start();
  if (cluster && kubeRegistry) cluster.kube.pushRegistryChanges(kubeRegistry, xds, () => store.snapshot());
  cluster?.meshConfigMap?.onChange((next) => {
    if (JSON.stringify(next.discoverySelectors) !== JSON.stringify(meshFile.discoverySelectors)) {
      log.warn('discoverySelectors changed in the mesh config: they apply when meshpilot restarts', { selectors: next.discoverySelectors });
    }
    if (next.mesh.trustDomain !== mesh.trustDomain)
      log.warn('trustDomain changed in the mesh config: the CA keeps the old one until meshpilot restarts', {
        trustDomain: next.mesh.trustDomain,
      });
    xds.setMesh(next.mesh);
  });
  networkWatch.onChange((next) => xds.setNetworks(withGatewayNames(next)));
  onGatewayNames = () => xds.setNetworks(withGatewayNames(networkWatch.current()));
  store.onChange((events, _snapshot, observedAt) => {
    // WorkloadEntries are endpoints: a batch of only those takes the EDS-only path (istiod's EDSUpdate).
    const endpointsOnly = events.every((e) => e.key.kind === 'WorkloadEntry');
    const now = performance.timeOrigin + performance.now();
    const happenedAt = Math.min(now, observedAt ?? now);
    xds.configUpdate(
      pushRequest({
        full: !endpointsOnly,
        configsUpdated: events.map((e) => configKeyString(e.key)),
        reason: endpointsOnly ? 'endpoint' : 'config',
        start: happenedAt,
      }),
      // A file source's settle before it read the change is then part of the debounce, not added to it.
      happenedAt,
    );
  });

  const grpcServer = new grpc.Server(grpcServerOptions(opts));
  const gate = createStreamGate({
    maxRequestsPerSecond: opts.maxRequestsPerSecond,
    maxWarming: opts.maxWarmingStreams,
    logger: log.child('ads'),
  });
  // Both ADS methods (SotW and Delta) go through the admission gate.
  const impl = adsImplementation(xds);
  grpcServer.addService(adsServiceDefinition, gate.wrapService(adsServiceDefinition, impl));
  const grpcListen = parseListenAddress(opts.grpcAddr, '--grpcAddr');
  const grpcPort = await new Promise<number>((resolve, reject) => {
    const host = grpcListen.host.includes(':') ? `[${grpcListen.host}]` : grpcListen.host;
    grpcServer.bindAsync(`${host}:${grpcListen.port}`, grpc.ServerCredentials.createInsecure(), (err, port) =>
      err ? reject(err) : resolve(port),
    );
  });
  const grpcAddress = `${grpcListen.host}:${grpcPort}`;
  const secure =
    opts.security.secureGrpcAddr !== ''
      ? await startSecure(
          opts,
          mesh,
          { definition: adsServiceDefinition, implementation: impl, outer: (guarded) => gate.wrapService(adsServiceDefinition, guarded) },
          xds,
          cluster,
          kubeRegistry,
          log,
          remotes,
        )
      : undefined;
  if (secure) debugAuthenticators = secure.authenticators;
  // Injection resolves ProxyConfig resources from the store (root namespace: the mesh's).
  const proxyConfigs = () => ({ list: (ns: string) => store.snapshot().list('ProxyConfig', ns), rootNamespace: systemNamespace });
  const webhooks = secure ? await startWebhooks(opts, secure, cluster, metrics, log, proxyConfigs) : undefined;
  if (!secure && opts.webhooks.httpsAddr !== '') log.info('no webhook server on --httpsAddr: it needs the CA (--secureGRPCAddr)');
  // The root-cert publisher and the webhooks' caBundle patcher: on the Lease holder only (src/bootstrap/singletons.ts).
  const singletons = startSingletons({
    cluster,
    namespace: opts.security.namespace,
    leaderElection: opts.leaderElection,
    ca: secure?.ca,
    discoverySelectors: meshFile.discoverySelectors,
    tasks: [
      ...(webhooks?.singletonTasks ?? []),
      // Gateway API status, as istiod's leader writes it.
      ...(cluster
        ? [
            cluster.kube.gatewayStatusTask({
              kubeConfig: cluster.kubeConfig,
              snapshot: () => store.snapshot(),
              push: () => xds.push(),
              logger: log.child('gateway-status'),
            }),
          ]
        : []),
    ],
    logger: log.child('singletons'),
  });
  log.info('grpc listening', {
    addr: grpcAddress,
    services: Object.keys(impl),
    maxRequestsPerSecond: opts.maxRequestsPerSecond,
    maxWarmingStreams: opts.maxWarmingStreams,
    maxConcurrentStreams: opts.maxConcurrentStreams,
    maxRecvMsgSize: opts.maxRecvMsgSize,
    maxServerConnectionAge: Number.isFinite(opts.maxServerConnectionAgeMs) ? `${opts.maxServerConnectionAgeMs}ms` : 'infinite',
  });
  const snapshot = store.snapshot();
  const objectsByKind = countObjects((kind) => snapshot.list(kind));
  const configErrors = [...store.errors().values()].reduce((n, list) => n + list.length, 0);
  for (const line of startupSummary({
    objectsByKind,
    errors: configErrors,
    grpcAddress,
    secureGrpcAddress: secure?.address,
    httpAddress: httpServer.address,
    monitoringAddress: monServer.address,
    webhookAddress: webhooks?.address,
  })) {
    log.info(line.msg, line.fields);
  }
  ready = true;
  const objects = [...objectsByKind.values()].reduce((a, b) => a + b, 0);
  log.info('ready', { objects, errors: configErrors, pushVersion: xds.push().version });
  // Start-up left V8's young generation at its maximum; give its ~30 MiB back once quiet.
  const youngGeneration = shrinkYoungGenerationWhenQuiet({ log: log.child('memory') });

  return {
    grpcAddress,
    httpAddress: httpServer.address,
    monitoringAddress: monServer.address,
    secureGrpcAddress: secure?.address,
    ca: secure?.ca,
    webhookAddress: webhooks?.address,
    xds,
    store,
    streamStats: () => gate.stats(),
    stop() {
      stopping ??= (async () => {
        // A leader hands its leases over at once, not after the drain, so a follower takes over immediately.
        const singletonsStopped = singletons.stop();
        youngGeneration.cancel();
        autoRegistration?.controller.stop();
        // The secure server shares the stream gate: its ADS streams are drained and ended with the others.
        const secureClosed = secure ? new Promise<void>((resolve) => secure.server.server.tryShutdown(() => resolve())) : Promise.resolve();
        let secureDone = false;
        void secureClosed.then(() => {
          secureDone = true;
        });
        const summary = await shutdownGrpc({
          grpcServer,
          gate,
          markNotReady: () => {
            ready = false;
          },
          durationMs: opts.shutdownDurationMs,
          logger: log.child('shutdown'),
        });
        if (secure) {
          if (!secureDone) secure.server.server.forceShutdown();
          secure.close();
        }
        await Promise.all([singletonsStopped, webhooks?.stop()]);
        await Promise.all([
          ...sources.map((s) => s.stop()),
          kubeRegistry?.stop(),
          remotes?.stop(),
          cluster?.meshConfigMap?.stop(),
          networkWatch.stop(),
        ]);
        gatewayNames?.stop();
        await xds.stop();
        consoleHub.close();
        await Promise.all(
          http.map(
            (s) =>
              new Promise<void>((resolve) => {
                s.close(() => resolve());
                s.closeAllConnections();
              }),
          ),
        );
        return summary;
      })();
      return stopping;
    },
  };
}

/**
 * --secureGRPCAddr: the CA (trust domain from the mesh config), the CSR service and ADS over TLS.
 * ADS there requires an authenticated caller (client certificate or JWT), as istiod's XDS_AUTH.
 */
async function startSecure(
  opts: DiscoveryOptions,
  mesh: MeshConfig,
  ads: SecureService,
  xds: DiscoveryServer,
  cluster: KubeCluster | undefined,
  pods: PodPlacements | undefined,
  log: Logger,
  remotes?: RemoteClusters,
): Promise<RunningSecureGrpc> {
  const sec = opts.security;
  const listen = parseListenAddress(sec.secureGrpcAddr, '--secureGRPCAddr');
  // On a cluster without plug-in certs, replicas share one self-signed root (istiod's istio-ca-secret).
  if (cluster && opts.cluster && !existsSync(path.join(sec.caCertsDir, CA_KEY_FILE))) {
    await cluster.kube.syncCaSecret({
      kubeConfig: cluster.kubeConfig,
      namespace: sec.namespace,
      selfSigned: { dir: sec.caDir, trustDomain: mesh.trustDomain, keyType: sec.caKeyType, rootTtlMs: sec.rootCertTtlMs },
      logger: log.child('security'),
    });
  }
  return startSecureGrpc({
    ca: {
      trustDomain: mesh.trustDomain,
      caDir: sec.caDir,
      caCertsDir: sec.caCertsDir,
      keyType: sec.caKeyType,
      workloadCertTtlMs: sec.workloadCertTtlMs,
      maxWorkloadCertTtlMs: sec.maxWorkloadCertTtlMs,
      rootCertTtlMs: sec.rootCertTtlMs,
      rootCheckIntervalMs: sec.rootCertCheckIntervalMs,
      rootGracePeriodPercentile: sec.rootCertGracePeriodPercentile,
    },
    listen,
    namespace: sec.namespace,
    customHosts: sec.customHosts,
    ...(sec.jwtRule ? { jwtRule: sec.jwtRule } : {}),
    trustedNodeAccounts: sec.trustedNodeAccounts,
    // On a cluster, an impersonated identity must run on the caller's node (istiod's node authorizer),
    // judged from the pods the registry already watches; without one, being a trusted account is all.
    ...(pods
      ? { placement: nodePlacement(pods, mesh.trustDomain) }
      : cluster
        ? { placement: () => Promise.resolve('the Kubernetes registry is off (--registries): no pods to check the node against') }
        : {}),
    csrLimits: sec.csrLimits,
    // On a cluster, service-account tokens are checked with TokenReview (istiod's KubeJWTAuthenticator).
    ...(cluster && opts.cluster
      ? {
          tokenReview: {
            review: cluster.kube.kubeTokenReviewer({
              kubeConfig: cluster.kubeConfig,
              clusterId: opts.cluster.clusterId,
              ...(remotes ? { remoteKubeConfig: (id: string) => remotes.kubeConfigOf(id) } : {}),
              logger: log.child('token-review'),
            }),
            audiences: sec.tokenAudiences,
            requireThirdPartyToken: sec.requireThirdPartyToken,
          },
        }
      : {}),
    // ADS as on 15010, behind the stream gate (rate limit first, as istiod) and then authentication.
    services: [ads],
    serverOptions: grpcServerOptions(opts),
    registry: xds.stats.registry,
    logger: log.child('security'),
  });
}
