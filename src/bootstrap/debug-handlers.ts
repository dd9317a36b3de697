import type { IncomingMessage } from 'node:http';
import type { ConfigError, ConfigSnapshot } from '../config/index.js';
import { gatewayApiStatus, type PushContext, pushRequest, type PushRequest } from '../model/index.js';
import {
  type Connection,
  buildConfigDump,
  configDumpJson,
  configz,
  registryz,
  decideHttpDebug,
  inScope,
  type HttpDebugAccessOptions,
  type PropagationTracker,
  parseChange,
  previewChange,
  findConnection,
  syncz,
  type GeneratorRegistry,
  type XdsStats,
} from '../xds/index.js';
import type { Logger } from '../util/log.js';
import { getHeapSpaceStatistics } from 'node:v8';
import type { Handler } from './http-server.js';
import type { ClusterDebugInfo } from './remote-clusters.js';

export { syncStatus } from '../xds/index.js';

/** What the debug endpoints read from the xDS server (DiscoveryServer satisfies it). */
export interface DebugXds {
  push(): PushContext;
  /** A never-published PushContext over other config (for /debug/preview); absent: preview answers 503. */
  previewPush?(config: ConfigSnapshot): PushContext;
  connectionList(): readonly Connection[];
  configUpdate(req: PushRequest): void;
  readonly stats: XdsStats;
}

export interface DebugDeps {
  readonly xds: DebugXds;
  /** The config store, for /debug/configz (without it configz answers 503). */
  readonly store?: { snapshot(): ConfigSnapshot; errors(): ReadonlyMap<string, readonly ConfigError[]> };
  /** The server's generator registry, for /debug/config_dump (without it config_dump answers 503). */
  readonly generators?: GeneratorRegistry;
  /** Propagation tracking for /debug/push_status. */
  readonly tracker?: PropagationTracker;
  /** The clusters whose services are read, local first (/debug/clusterz; without it clusterz answers 503). */
  readonly clusters?: () => readonly ClusterDebugInfo[];
  /** Forces a full push to every proxy (default: a forced full configUpdate with reason debug). */
  readonly forcePush?: () => void;
  /**
   * Who may call (istiod's allowAuthenticatedOrLocalhost, see debug-access.ts); without it every
   * caller may (tests and embedding). meshpilot discovery always sets it.
   */
  readonly access?: HttpDebugAccessOptions & { readonly logger: Logger };
}

type Result = Awaited<ReturnType<Handler>>;

const HELP: Readonly<Record<string, string>> = {
  '/debug/list': 'List all supported debug commands in json',
  '/debug/syncz': 'Synchronization status of all proxies connected to this instance',
  '/debug/config_dump': 'ConfigDump in the form of the Envoy admin config dump API for passed in proxyID',
  '/debug/adsz': 'Status and debug interface for ADS (?push=true pushes to every proxy)',
  '/debug/push_status': 'Last push and the propagation of recent config changes',
  '/debug/configz': 'Every config in the store and the current config errors',
  '/debug/registryz': 'Services of the current push context',
  '/debug/clusterz': 'List remote clusters where istiod reads endpoints',
  '/debug/cachez': 'Info about the internal XDS cache',
  '/debug/memz':
    'Process memory: RSS, V8 heap by space, external and array buffers (?gc=true collects first when node runs with --expose-gc)',
  '/debug/preview':
    'POST a config change (YAML/JSON): per connected proxy, the xDS resources it would add, remove or change (?proxyID= for one); nothing is applied',
};

/** Largest change /debug/preview reads (as the config sources' file limit). */
const MAX_PREVIEW_BYTES = 4 * 1024 * 1024;

async function readBody(req: IncomingMessage): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_PREVIEW_BYTES) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function text(status: number, body: string): Result {
  return { status, body: body.endsWith('\n') ? body : body + '\n', contentType: 'text/plain' };
}

function json(body: unknown): Result {
  return { status: 200, body };
}

function nowMs(): number {
  return performance.timeOrigin + performance.now();
}

/** The connection `?proxyID=` names, or the error answer istiod gives. */
function debugConnection(xds: DebugXds, url: URL): Connection | Result {
  const proxyID = url.searchParams.get('proxyID') ?? '';
  if (proxyID === '') return text(400, 'You must provide a proxyID in the query string');
  const conn = findConnection(xds.connectionList(), proxyID);
  if (!conn) return notConnected(proxyID);
  return conn;
}

const notConnected = (proxyID: string): Result =>
  text(404, `Proxy ${proxyID} is not connected to this instance. It may be connected to another instance.`);

function adsClient(c: Connection): Record<string, unknown> {
  return {
    connectionId: c.id,
    connectedAt: new Date(c.connectedAt).toISOString(),
    address: c.peer,
    proxy: c.proxy.id,
    labels: c.proxy.labels,
    metadata: c.proxy.metadata.raw,
    watches: Object.fromEntries(c.watchedTypes().map((w) => [w.typeUrl, w.wildcard ? [] : [...w.names].sort()])),
    bytesSent: c.bytesSent(),
  };
}

/** What the process holds (istiod's pprof heap, in the terms Node has): bytes, by V8 heap space. */
function memz(collect: boolean): Record<string, unknown> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (collect && gc) gc();
  const m = process.memoryUsage();
  return {
    collected: collect && gc !== undefined,
    rss: m.rss,
    heapTotal: m.heapTotal,
    heapUsed: m.heapUsed,
    external: m.external,
    arrayBuffers: m.arrayBuffers,
    heapSpaces: Object.fromEntries(
      getHeapSpaceStatistics().map((sp) => [sp.space_name, { size: sp.space_size, used: sp.space_used_size }]),
    ),
  };
}

function isDeps(x: DebugXds | DebugDeps): x is DebugDeps {
  return 'xds' in x;
}

/**
 * istiod's debug endpoints (served on --httpAddr and --monitoringAddr). Takes the deps object;
 * a bare DiscoveryServer still works, without configz and config_dump.
 */
export function debugHandlers(depsOrXds: DebugDeps | DebugXds): Map<string, Handler> {
  const deps: DebugDeps = isDeps(depsOrXds) ? depsOrXds : { xds: depsOrXds };
  const { xds, store, generators, tracker } = deps;
  const forcePush = deps.forcePush ?? (() => xds.configUpdate(pushRequest({ full: true, forced: true, reason: 'debug', start: nowMs() })));

  const handlers: [string, Handler][] = [
    [
      '/debug/list',
      () =>
        json(
          Object.keys(HELP)
            .map((k) => k.slice('/debug/'.length))
            .filter((k) => k !== 'list')
            .sort(),
        ),
    ],
    ['/debug/syncz', () => json(syncz(xds.connectionList()))],
    [
      '/debug/config_dump',
      (_req, url) => {
        if (!generators) return text(503, 'config_dump is not available: the server was started without its generator registry');
        const conn = debugConnection(xds, url);
        if ('status' in conn) return conn;
        const dump = buildConfigDump(conn, xds.push(), generators, {
          now: nowMs(),
          includeEds: url.searchParams.get('include_eds') !== 'false',
        });
        return json(configDumpJson(dump));
      },
    ],
    [
      '/debug/adsz',
      (_req, url) => {
        if (url.searchParams.get('push') !== null && url.searchParams.get('push') !== 'false') {
          forcePush();
          return text(200, `Pushed to ${xds.connectionList().length} servers`);
        }
        let conns = xds.connectionList();
        if (url.searchParams.get('proxyID')) {
          const conn = debugConnection(xds, url);
          if ('status' in conn) return conn;
          conns = [conn];
        }
        const clients = [...conns].sort((a, b) => (a.id < b.id ? -1 : 1)).map(adsClient);
        return json({ totalClients: clients.length, pushVersion: xds.push().version, stats: xds.stats.snapshot(), clients });
      },
    ],
    [
      '/debug/push_status',
      () => {
        const push = xds.push();
        const changes = tracker?.changes() ?? [];
        const last = changes[0];
        return json({
          version: push.version,
          services: push.registry.services.length,
          connected: xds.connectionList().length,
          pushContextInitMs: Math.round(xds.stats.lastPushContextInitMs() * 100) / 100,
          ...(last
            ? { lastPush: { id: last.id, version: last.version, time: last.publishedAt, proxiesQueued: last.proxies, state: last.state } }
            : {}),
          changes,
        });
      },
    ],
    [
      '/debug/configz',
      () => {
        if (!store) return text(503, 'configz is not available: the server was started without its config store');
        const snapshot = store.snapshot();
        const push = xds.push();
        const statuses = gatewayApiStatus(snapshot, {
          domain: push.mesh.domain,
          registry: push.registry,
          secretsInConfig: snapshot.byKind('Secret').size > 0,
        });
        return json(configz(snapshot, store.errors(), statuses));
      },
    ],
    ['/debug/registryz', () => json(registryz(xds.push()))],
    // istiod answers 400 when it reads no cluster (file mode).
    ['/debug/clusterz', () => (deps.clusters ? json(deps.clusters()) : text(400, 'clusterz: no Kubernetes cluster is configured\n'))],
    [
      '/debug/preview',
      async (req, url) => {
        if (req.method !== 'POST') return text(405, 'POST the change (YAML or JSON) to /debug/preview');
        if (!generators || !store || !xds.previewPush)
          return text(503, 'preview is not available: the server was started without its config store or generators');
        const body = await readBody(req);
        if (body === undefined) return text(413, `the change is larger than ${MAX_PREVIEW_BYTES} bytes`);
        const parsed = parseChange(body, url.searchParams.get('file') ?? 'change.yaml');
        if ('errors' in parsed) return { status: 400, body: { errors: parsed.errors } };
        let conns = xds.connectionList();
        if (url.searchParams.get('proxyID')) {
          const conn = debugConnection(xds, url);
          if ('status' in conn) return conn;
          conns = [conn];
        }
        const previewPush = xds.previewPush.bind(xds);
        return json(
          previewChange(parsed.configs, { snapshot: store.snapshot(), current: xds.push(), previewPush, connections: conns, generators }),
        );
      },
    ],
    [
      '/debug/cachez',
      () => {
        const push = xds.push();
        return json({ pushVersion: push.version, ...push.cache.stats(), total: xds.stats.cacheTotals() });
      },
    ],
    ['/debug/memz', (_req, url) => json(memz(url.searchParams.get('gc') === 'true'))],
  ];
  return deps.access ? guardHandlers(handlers, xds, deps.access) : new Map(handlers);
}

/**
 * Puts handlers behind the debug endpoints' access rule (the same decision and code path as
 * /debug/*): the web console is served through this too.
 */
export function guardHandlers(
  handlers: Iterable<readonly [string, Handler]>,
  xds: Pick<DebugXds, 'connectionList'>,
  access: NonNullable<DebugDeps['access']>,
): Map<string, Handler> {
  return new Map([...handlers].map(([path, h]) => [path, guarded(path, h, xds, access)]));
}

/** A handler behind decideHttpDebug; a namespace-scoped caller sees only its own namespace's proxies. */
function guarded(path: string, handler: Handler, xds: Pick<DebugXds, 'connectionList'>, access: NonNullable<DebugDeps['access']>): Handler {
  return async (req, url) => {
    const d = await decideHttpDebug(req, path, access);
    if (!d.ok) {
      access.logger.warn('debug request refused', { path, peer: req.socket.remoteAddress, status: d.status, reason: d.reason });
      // As istiod: the status only, no detail for the caller.
      return text(d.status, d.status === 401 ? 'Unauthorized' : 'Forbidden');
    }
    if (!d.scope.all) {
      const proxyID = url.searchParams.get('proxyID') ?? '';
      const conn = findConnection(xds.connectionList(), proxyID);
      if (conn && !inScope(d.scope, conn.proxy)) return notConnected(proxyID);
    }
    return handler(req, url);
  };
}
