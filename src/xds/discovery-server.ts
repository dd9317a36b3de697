import { randomBytes } from 'node:crypto';
import type * as grpc from '@grpc/grpc-js';
import type { Registry } from 'prom-client';
import type { DeltaDiscoveryRequest, DiscoveryRequest } from '../gen/envoy/service/discovery/v3/discovery_pb.js';
import type { Node } from '../gen/envoy/config/core/v3/base_pb.js';
import type { ConfigSnapshot, MeshConfig } from '../config/index.js';
import {
  parseProxy,
  type Proxy,
  lackingSummary,
  PushContext,
  changeSet,
  instancesDep,
  type ChangeSet,
  pushRequest,
  type PushRequest,
  XdsCache,
  DEFAULT_NETWORK_SETTINGS,
  mergePushRequests,
  networkGateways,
  type NetworkGateways,
  type NetworkSettings,
} from '../model/index.js';
import type { RegistrySnapshot } from '../registry/index.js';
import { errorCodeOf, errorMessage, grpcStatus } from '../util/errors.js';
import type { Logger } from '../util/log.js';
import type { AdsStream, DeltaAdsStream } from './ads-service.js';
import { Connection } from './connection.js';
import { DeltaXds } from './delta-stream.js';
import { planPush } from './push-plan.js';
import { SotwXds } from './sotw-stream.js';
import type { StreamHost, StreamProtocol } from './stream-host.js';
import { realClock, type Clock } from '../util/clock.js';
import { startDebounce, type DebounceOptions, type Debouncer } from './debounce.js';
import type { GeneratorRegistry } from './generator.js';
import { PushQueue, startPushWorkers, type PushInFlight, type PushWorkers } from './push-queue.js';
import type { XdsResource } from './resource.js';
import type { WireMessage } from './wire-message.js';
import { PUSH_ORDER, shortType, TypeUrl } from './type-urls.js';
import { ConnectionIndex } from './connection-index.js';
import { NameSetPool } from './name-sets.js';
import type { WatchedResource } from './watched-resource.js';
import { WriteBudget } from './write-budget.js';
import { XdsStats } from './xds-stats.js';
import type { XdsObserver } from './xds-observer.js';

export interface DiscoveryServerOptions {
  readonly generators: GeneratorRegistry;
  readonly mesh: MeshConfig;
  /** The current config; called once per full push. */
  readonly snapshot: () => ConfigSnapshot;
  /** Registries beside the config's ServiceEntries (Kubernetes), as they are now; called once per push. */
  readonly registries?: () => readonly RegistrySnapshot[];
  /** meshNetworks and the rest of what decides networks (one network when absent); setNetworks replaces it. */
  readonly networks?: NetworkSettings;
  /** This control plane's cluster (--clusterID), handed to every PushContext. */
  readonly clusterId?: string;
  /** AMBIENT_ENABLE_DRY_RUN_AUTHORIZATION_POLICY, handed to every PushContext. */
  readonly ztunnelDryRunPolicies?: boolean;
  /** ISTIO_DUAL_STACK and PILOT_ENABLE_AMBIENT, handed to every PushContext (dual-stack proxies' addresses). */
  readonly dualStack?: boolean;
  readonly ambient?: boolean;
  readonly logger: Logger;
  readonly debounce?: Omit<DebounceOptions, 'clock' | 'logger'>;
  /** Concurrent pushes (PILOT_PUSH_THROTTLE). */
  readonly pushThrottle: number;
  readonly cacheSize?: number;
  readonly clock?: Clock;
  readonly observers?: readonly XdsObserver[];
  /**
   * Largest response a client accepts (gRPC's default max receive, 4 MiB). Bigger Delta responses
   * are split; bigger SotW responses (which cannot be) are sent with a warning.
   */
  readonly maxResponseBytes?: number;
  /**
   * Bytes of encoded responses that may wait on the transport at once, over every stream
   * (default 64 MiB): a storm of slow readers then costs this much memory, not a copy of each
   * proxy's config.
   */
  readonly maxInflightBytes?: number;
  /**
   * A stream whose response the transport has not taken after this long (its proxy stopped
   * reading) is ended with UNAVAILABLE and gives back its share of the write budget; the proxy
   * reconnects and resyncs. 0 or absent: wait forever.
   */
  readonly sendTimeoutMs?: number;
  /**
   * Decides whether the caller of a stream may act for the proxy its node names (istiod: the
   * authenticated identity's namespace must be the proxy's). Returns why not, or undefined to admit.
   */
  readonly authorize?: (call: object, proxy: Proxy) => string | undefined;
  /** The process's metrics registry (its own when absent: tests, previews). */
  readonly metrics?: Registry;
  /** What else a proxy's streams start, end and report: WorkloadEntry auto-registration and health. */
  readonly workloads?: ProxyLifecycle;
}

/**
 * istiod's WorkloadEntryController seam: told of each stream (before its first request is
 * answered; a rejection refuses the stream), of its end, and of its proxy's health reports.
 */
export interface ProxyLifecycle {
  onConnect(conn: Connection): Promise<void>;
  onDisconnect(conn: Connection): void;
  onHealth(conn: Connection, healthy: boolean, message: string): void;
}

/** gRPC's default max receive message size on clients (Envoy, grpc-js). */
export const DEFAULT_MAX_RESPONSE_BYTES = 4 * 1024 * 1024;

export const DEFAULT_MAX_INFLIGHT_BYTES = 64 * 1024 * 1024;

/**
 * istiod's DiscoveryServer: owns the current PushContext, the connected proxies, the debouncer and
 * the push queue. Config events come in through configUpdate (cheap: count and enqueue); streams
 * through handleStream. The stream layer sees the mesh only through the generator registry.
 */
export class DiscoveryServer {
  readonly stats: XdsStats;
  private readonly opts: DiscoveryServerOptions;
  private readonly log: Logger;
  private readonly clock: Clock;
  private readonly connections = new Map<string, Connection>();
  private readonly queue = new PushQueue<Connection>();
  /** Per stream (gone with it): the types it was told we do not serve. A server-wide set of `conn|type` leaked. */
  private readonly noGeneratorWarned = new WeakMap<Connection, Set<string>>();
  /** When each queued connection entered the queue (pilot_proxy_queue_time). */
  private readonly queuedAt = new WeakMap<Connection, number>();
  private readonly noncePrefix = randomBytes(4).toString('hex');
  private readonly observerHandlers = new Map<keyof XdsObserver, readonly ((...a: unknown[]) => void)[]>();
  /** Generated resources and derivations, kept across pushes and invalidated by what changed. */
  readonly cache: XdsCache;
  /** SotW subscription lists shared between streams that watch the same names. */
  private readonly nameSets = new NameSetPool();
  /** Streams by watched ClusterLoadAssignment and by proxy address (EDS-only push planning). */
  private readonly connectionIndex = new ConnectionIndex();
  private currentPush: PushContext | undefined;
  /** The mesh config of the next push (setMesh). */
  private mesh: MeshConfig;
  /** The network settings of the next push (setNetworks). */
  private networks: NetworkSettings;
  private pushVersion = 0;
  private nonceCounter = 0;
  private connCounter = 0;
  private debouncer: Debouncer | undefined;
  private workers: PushWorkers | undefined;
  private readonly maxResponseBytes: number;
  /** Shared by every stream's writes. */
  readonly writeBudget: WriteBudget;
  /** The two protocols, peers over one StreamHost. */
  private readonly sotw: SotwXds;
  private readonly delta: DeltaXds;

  constructor(opts: DiscoveryServerOptions) {
    this.opts = opts;
    this.stats = new XdsStats(opts.metrics);
    this.log = opts.logger;
    this.clock = opts.clock ?? realClock;
    this.mesh = opts.mesh;
    this.networks = opts.networks ?? DEFAULT_NETWORK_SETTINGS;
    this.maxResponseBytes = opts.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
    this.writeBudget = new WriteBudget(opts.maxInflightBytes ?? DEFAULT_MAX_INFLIGHT_BYTES);
    this.cache = new XdsCache(opts.cacheSize);
    const host: StreamHost = {
      log: this.log,
      stats: this.stats,
      clock: this.clock,
      maxResponseBytes: this.maxResponseBytes,
      push: () => this.push(),
      generate: (conn, typeUrl, w, push, req) => this.generate(conn, typeUrl, w, push, req),
      nextNonce: () => this.nextNonce(),
      deltaOnly: (conn, typeUrl) => this.opts.generators.lookup(conn.proxy, typeUrl)?.deltaOnly === true,
      nameSets: this.nameSets,
      recordNack: (conn, typeUrl, nonce, message, fields) => this.recordNack(conn, typeUrl, nonce, message, fields),
      notify: (event, ...args) => this.notify(event, ...args),
      onHealth: (conn, errorDetail) => this.opts.workloads?.onHealth(conn, errorDetail === undefined, errorDetail?.message ?? ''),
    };
    this.sotw = new SotwXds(host);
    this.delta = new DeltaXds(host);
  }

  /**
   * A PushContext over `config` with this server's mesh config and registries and a private cache:
   * never published, never cached beside the real ones (meshctl x preview).
   */
  previewPush(config: ConfigSnapshot): PushContext {
    return new PushContext({
      version: 'preview',
      mesh: this.mesh,
      config,
      registries: this.registries(),
      networks: this.networks,
      ...(this.opts.clusterId !== undefined ? { clusterId: this.opts.clusterId } : {}),
      ztunnelDryRunPolicies: this.opts.ztunnelDryRunPolicies === true,
      dualStack: this.opts.dualStack === true,
      ambient: this.opts.ambient === true,
    });
  }

  /** Builds the first PushContext and starts the debouncer and push workers. */
  start(): void {
    this.currentPush = this.buildPush(this.registries());
    this.debouncer = startDebounce((req, debouncedMs, events) => this.onDebounced(req, debouncedMs, events), {
      ...this.opts.debounce,
      clock: this.clock,
      logger: this.log,
    });
    this.workers = startPushWorkers(this.queue, this.opts.pushThrottle, (conn, req) => this.pushConnection(conn, req), {
      logger: this.log,
    });
  }

  async stop(): Promise<void> {
    this.debouncer?.stop();
    for (const c of this.connections.values()) c.close();
    await this.workers?.stop();
  }

  /**
   * A new mesh config (the `istio` ConfigMap changed): every index and cached build depends on it,
   * so this is a full, unscoped push (istiod's GlobalUpdate).
   */
  setMesh(mesh: MeshConfig): void {
    if (mesh === this.mesh) return;
    this.mesh = mesh;
    this.configUpdate(pushRequest({ full: true, reason: 'global', start: this.clock.now() }));
  }

  /**
   * New network settings (meshNetworks, the system namespace's network label): endpoint networks and
   * gateways may all move, so a full, unscoped push (istiod's NetworksTrigger).
   */
  setNetworks(networks: NetworkSettings): void {
    if (networks === this.networks) return;
    this.networks = networks;
    this.configUpdate(pushRequest({ full: true, reason: 'networks', forced: true, start: this.clock.now() }));
  }

  private registries(): readonly RegistrySnapshot[] {
    return this.opts.registries?.() ?? [];
  }

  push(): PushContext {
    if (!this.currentPush) throw new Error('DiscoveryServer.start() was not called');
    return this.currentPush;
  }

  connectionList(): readonly Connection[] {
    return [...this.connections.values()];
  }

  /** The push queue now: connections waiting for a worker and connections being pushed. */
  queueDepth(): { readonly pending: number; readonly processing: number } {
    return { pending: this.queue.pending(), processing: this.queue.processing() };
  }

  /** What the connection index holds (tests: a closed stream leaves nothing behind). */
  indexSizes(): ReturnType<ConnectionIndex['sizes']> {
    return this.connectionIndex.sizes();
  }

  /**
   * A config or registry change: counted and handed to the debouncer; nothing expensive here.
   * `happenedAt`: when its source saw it, if earlier than now (see Debouncer.enqueue).
   */
  configUpdate(req: PushRequest, happenedAt?: number): void {
    this.stats.recordInboundUpdate(req.full ? 'config' : 'eds');
    this.debouncer?.enqueue(req, happenedAt);
  }

  /** Tells every observer; an observer that throws is logged, never allowed to break a push. */
  private notify<K extends keyof XdsObserver>(event: K, ...args: Parameters<NonNullable<XdsObserver[K]>>): void {
    for (const fn of this.observersOf(event)) {
      try {
        fn(...(args as unknown[]));
      } catch (err) {
        this.log.warn('xds observer failed', { event, error: errorMessage(err) });
      }
    }
  }

  /** The observers' handlers of one event, bound once (a mesh-wide push tells them of every response and ACK). */
  private observersOf(event: keyof XdsObserver): readonly ((...a: unknown[]) => void)[] {
    let fns = this.observerHandlers.get(event);
    if (!fns) {
      fns = (this.opts.observers ?? []).flatMap((o) => {
        const fn = o[event] as ((...a: unknown[]) => void) | undefined;
        return fn ? [fn.bind(o)] : [];
      });
      this.observerHandlers.set(event, fns);
    }
    return fns;
  }

  /**
   * The next PushContext: incremental after `previous` (indexes of unchanged kinds reused, the
   * others updated for just the changed objects where they can be), whole without it.
   */
  private buildPush(registries: readonly RegistrySnapshot[], previous?: PushContext, gateways?: NetworkGateways): PushContext {
    const started = performance.now();
    this.pushVersion++;
    const push = new PushContext({
      version: `${new Date(this.clock.now()).toISOString()}/${this.pushVersion}`,
      mesh: this.mesh,
      config: this.opts.snapshot(),
      cache: this.cache,
      registries,
      networks: this.networks,
      ...(gateways ? { networkGateways: gateways } : {}),
      ...(this.opts.clusterId !== undefined ? { clusterId: this.opts.clusterId } : {}),
      ztunnelDryRunPolicies: this.opts.ztunnelDryRunPolicies === true,
      dualStack: this.opts.dualStack === true,
      ambient: this.opts.ambient === true,
      ...(previous ? { previous } : {}),
    });
    this.stats.recordPushContextInit(performance.now() - started, push.registry.services.length);
    return push;
  }

  private onDebounced(debounced: PushRequest, debouncedMs: number, events: number): void {
    const started = performance.now();
    const old = this.currentPush;
    let req = debounced;
    let next: PushContext;
    let changes: ChangeSet | 'all';
    let gateways: NetworkGateways;
    try {
      // Invalidate first: the new snapshot's epoch then keeps builds from older snapshots out of the cache.
      const registries = this.registries();
      // A gateway Service that changed moves the EDS of every service with endpoints in its network
      // (istiod's NetworkGatewaysHandler forces a full push): nothing cached survives, every proxy is pushed.
      gateways = networkGateways(this.networks, registries, this.opts.snapshot().list('KubernetesGateway'));
      if (old && old.networkSettings === this.networks && old.networkGateways.key !== gateways.key) {
        req = mergePushRequests(req, pushRequest({ full: true, reason: 'networks', forced: true, start: this.clock.now() }));
      }
      changes = changeSet(
        req,
        old?.snapshot,
        this.opts.snapshot(),
        this.mesh.domain,
        this.mesh.rootNamespace,
        old ? { before: old.registry, after: registries } : undefined,
      );
      if (changes === 'all') this.cache.clear();
      else this.cache.invalidate(changes);
      next = this.buildPush(registries, old, gateways);
    } catch (err) {
      // Keep serving the previous snapshot; the next event retries.
      this.cache.clear();
      this.stats.inc('pushContextErrors');
      this.log.error('push context build failed; keeping the previous one', { error: errorMessage(err) });
      return;
    }
    this.currentPush = next;
    this.stats.recordDebounce(debouncedMs);
    for (const [reason, n] of req.reason) this.stats.recordPushTrigger(reason, n);
    const plan = planPush(req, old, next, changes, this.connections.values(), this.connectionIndex);
    this.notify(
      'pushStarted',
      req,
      next.version,
      plan.map(([c]) => c),
    );
    const queuedAt = this.clock.now();
    for (const [conn, r] of plan) {
      this.queuedAt.set(conn, queuedAt);
      this.queue.enqueue(conn, r);
    }
    const planMs = performance.now() - started;
    this.stats.recordPushPlan(planMs);
    this.log.info('push', {
      version: next.version,
      full: req.full,
      configs: [...req.configsUpdated].slice(0, 10),
      events,
      debounceMs: Math.round(debouncedMs),
      proxies: plan.length,
      connected: this.connections.size,
      planMs: Math.round(planMs * 10) / 10,
      initMs: Math.round(this.stats.lastPushContextInitMs() * 100) / 100,
      rebuilt: next.rebuild.rebuilt,
    });
  }

  /**
   * A queued push to one proxy: every watched type (EDS only for EDS-only requests), in istiod's
   * order, from the newest snapshot. Resolves once the responses are written; the transport may
   * still hold them (returned as `taken`), so a proxy that stopped reading has at most one
   * response per type waiting, and its next push is merged until they are taken.
   */
  private async pushConnection(conn: Connection, req: PushRequest): Promise<PushInFlight | undefined> {
    if (conn.isClosed()) return undefined;
    const push = this.push();
    const types = req.full ? pushOrder(conn) : EDS_ONLY;
    // Envoy keeps a changed EDS cluster warming until that cluster's endpoints arrive again, even
    // when they did not change: the EDS step re-sends the assignments of the clusters CDS re-sent.
    let warming: ReadonlySet<string> | undefined;
    for (const t of types) {
      const w = conn.watched(t);
      if (!w || (!w.wildcard && w.names.size === 0)) continue;
      const resend = t === TypeUrl.ClusterLoadAssignment ? warming : undefined;
      const stream: StreamProtocol<unknown> = conn.delta ? this.delta : this.sotw;
      const sent = await stream.sendType(conn, t, push, req, false, resend ? { resend } : {});
      if (t === TypeUrl.Cluster) warming = sent;
    }
    // istiod's pilot_proxy_convergence_time: first event of the request → push to this proxy done.
    this.stats.recordConvergence(this.clock.now() - req.start);
    const queuedAt = this.queuedAt.get(conn) ?? req.start;
    this.queuedAt.delete(conn);
    this.notify('proxyPushed', conn, req, queuedAt);
    return { taken: conn.drained() };
  }

  private nextNonce(): string {
    return `${this.noncePrefix}-${(++this.nonceCounter).toString(36)}`;
  }

  /**
   * Generates one type for one proxy through the shared registry (SotW and Delta alike, so one push
   * marshals each resource once). A failure leaves the proxy's config as it was (undefined).
   */
  private generate(
    conn: Connection,
    typeUrl: string,
    w: WatchedResource,
    push: PushContext,
    req: PushRequest,
  ): readonly XdsResource[] | undefined {
    const gen = this.opts.generators.lookup(conn.proxy, typeUrl);
    if (gen) {
      try {
        return gen.generate(conn.proxy, w, push, req);
      } catch (err) {
        this.stats.inc('generateErrors');
        this.log.error('generate failed', { proxy: conn.proxy.id, type: shortType(typeUrl), error: errorMessage(err) });
        return undefined;
      }
    }
    let warned = this.noGeneratorWarned.get(conn);
    if (!warned) this.noGeneratorWarned.set(conn, (warned = new Set()));
    if (!warned.has(typeUrl)) {
      // Answer with an empty set so the client does not wait forever on a type we do not serve.
      warned.add(typeUrl);
      this.log.warn('no generator for type; answering with no resources', { proxy: conn.proxy.id, type: typeUrl });
    }
    return [];
  }

  /** Serves one SotW ADS stream (StreamAggregatedResources). */
  readonly handleStream = (call: AdsStream): void => {
    this.serve<DiscoveryRequest>(call, false, (conn, req) => this.sotw.onRequest(conn, req));
  };

  /** Serves one Delta ADS stream (DeltaAggregatedResources). */
  readonly handleDeltaStream = (call: DeltaAdsStream): void => {
    this.serve<DeltaDiscoveryRequest>(call, true, (conn, req) => this.delta.onRequest(conn, req));
  };

  /** Stream plumbing shared by SotW and Delta: connect on the first request, serialize requests, clean up once. */
  private serve<R extends { node?: Node | undefined }>(
    call: grpc.ServerDuplexStream<R, WireMessage>,
    delta: boolean,
    onRequest: (conn: Connection, req: R) => Promise<void>,
  ): void {
    let conn: Connection | undefined;
    let chain: Promise<void> = Promise.resolve();
    let closed = false;
    const cleanup = (why: string): void => {
      if (closed) return;
      closed = true;
      if (conn) {
        conn.markClosed();
        this.connections.delete(conn.id);
        this.connectionIndex.remove(conn);
        this.forgetWorkload(conn.proxy);
        this.opts.workloads?.onDisconnect(conn);
        this.stats.setConnected(this.connections.size);
        this.notify('disconnected', conn);
        this.log.info('proxy disconnected', { proxy: conn.proxy.id, connection: conn.id, reason: why });
      }
    };
    call.on('data', (req: R) => {
      chain = chain
        .then(async () => {
          if (closed) return;
          if (!conn) {
            conn = this.connect(call, req.node, delta);
            if (!conn) return;
            const refused = await this.registerWorkload(conn);
            if (refused) return cleanup(refused);
          }
          await onRequest(conn, req);
        })
        .catch((err: unknown) => this.log.error('request handling failed', { proxy: conn?.proxy.id, error: errorMessage(err) }));
    });
    call.on('end', () => {
      cleanup('client closed the stream');
      call.end();
    });
    call.on('error', (err: Error) => cleanup(`stream error: ${err.message}`));
    call.on('cancelled', () => cleanup('cancelled'));
    call.on('close', () => cleanup('closed'));
  }

  /** Tells the workload lifecycle of a new stream; why the stream was refused, if it was. */
  private async registerWorkload(conn: Connection): Promise<string | undefined> {
    if (!this.opts.workloads) return undefined;
    try {
      await this.opts.workloads.onConnect(conn);
      return undefined;
    } catch (err) {
      const message = errorMessage(err);
      conn.reject(grpcStatus(errorCodeOf(err)), message);
      return `workload registration failed: ${message}`;
    }
  }

  /**
   * Drops the cache entries built for a workload address once no stream's proxy is at it any more
   * (inbound clusters and listeners, the address's service instances): a restarted pod comes back
   * at a new address, so they would never be read again.
   */
  private forgetWorkload(proxy: Proxy): void {
    const gone = proxy.ipAddresses.filter((ip) => !this.connectionIndex.hasAddress(ip));
    if (gone.length > 0) this.cache.forget(gone.map(instancesDep));
  }

  private connect(call: grpc.ServerDuplexStream<unknown, WireMessage>, node: Node | undefined, delta: boolean): Connection | undefined {
    const parsed = parseProxy(node);
    if (!parsed.ok) {
      const message = parsed.errors.map((e) => e.message).join('; ');
      this.log.warn('rejecting stream', { peer: call.getPeer(), error: message });
      call.emit('error', { code: 3 /* INVALID_ARGUMENT */, details: message });
      return undefined;
    }
    const proxy = parsed.value;
    const denied = this.opts.authorize?.(call, proxy);
    if (denied !== undefined) {
      this.log.warn('rejecting stream', { peer: call.getPeer(), proxy: proxy.id, error: denied });
      call.emit('error', { code: 7 /* PERMISSION_DENIED */, details: denied });
      return undefined;
    }
    const id = `${proxy.id}-${++this.connCounter}`;
    const conn = new Connection({
      id,
      proxy,
      delta,
      connectedAt: this.clock.now(),
      peer: call.getPeer(),
      budget: this.writeBudget,
      ...(this.opts.sendTimeoutMs !== undefined ? { sendTimeoutMs: this.opts.sendTimeoutMs } : {}),
      onWatch: (c, typeUrl, w) => this.connectionIndex.watch(c, typeUrl, w),
      sink: {
        write: (bytes) =>
          new Promise<void>((resolve) => {
            if (!call.write(bytes, () => resolve())) call.once('drain', () => resolve());
          }),
        end: () => call.end(),
        reject: (code, message) => {
          this.log.warn('rejecting a request', { proxy: proxy.id, connection: id, error: message });
          call.emit('error', { code, details: message });
        },
        abort: (message) => {
          this.log.warn('ending a stream whose proxy stopped reading', { proxy: proxy.id, connection: id, error: message });
          call.emit('error', { code: 14 /* UNAVAILABLE */, details: message });
        },
      },
    });
    this.connections.set(id, conn);
    this.connectionIndex.add(conn);
    this.stats.setConnected(this.connections.size);
    this.notify('connected', conn);
    // Said once, here: a proxy without Istio's extensions (stock Envoy) gets its config without them.
    const lacks = lackingSummary(proxy.extensions);
    this.log.info('proxy connected', {
      proxy: proxy.id,
      connection: id,
      peer: conn.peer,
      delta,
      generator: proxy.metadata.generator ?? '',
      ...(lacks ? { extensions: lacks } : {}),
    });
    return conn;
  }

  /** A NACK is an event, never a reason to re-push: counted, reported, logged at warn. */
  private recordNack(conn: Connection, typeUrl: string, nonce: string, message: string, fields: Record<string, unknown>): void {
    this.stats.recordReject(shortType(typeUrl));
    this.notify('nackReceived', conn, typeUrl, nonce, message);
    this.log.warn('NACK', { proxy: conn.proxy.id, type: shortType(typeUrl), nonce, ...fields, error: message });
  }
}

const EDS_ONLY: readonly string[] = [TypeUrl.ClusterLoadAssignment];

/** The types a connection watches in istiod's push order; types outside that order follow as watched. */
function pushOrder(conn: Connection): string[] {
  const out: string[] = [];
  for (const t of PUSH_ORDER) if (conn.watched(t)) out.push(t);
  if (out.length < conn.watchedCount()) {
    for (const w of conn.watchedTypes()) if (!PUSH_ORDER.includes(w.typeUrl)) out.push(w.typeUrl);
  }
  return out;
}
