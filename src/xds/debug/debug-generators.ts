import { create, type JsonObject } from '@bufbuild/protobuf';
import { anyPack, timestampFromMs } from '@bufbuild/protobuf/wkt';
import { ClientConfigSchema, ConfigStatus } from '../../gen/envoy/service/status/v3/csds_pb.js';
import type { Proxy, PushContext } from '../../model/index.js';
import type { Logger } from '../../util/log.js';
import type { Connection } from '../connection.js';
import type { Generator, GeneratorRegistry } from '../generator.js';
import { makeResource, type XdsResource } from '../resource.js';
import { TypeUrl } from '../type-urls.js';
import { buildConfigDump } from './config-dump.js';
import { inScope, type DebugScope, type XdsDebugAccess } from './debug-access.js';
import { findConnection, syncStatus } from './syncz.js';

/** istiod's debug type URLs (`istio.io/debug/…`): a debug client's own watches are not proxy state. */
const DEBUG_TYPE_PREFIX = 'istio.io/debug';

/** What the debug generators read from the server. */
export interface DebugServerView {
  connectionList(): readonly Connection[];
  push(): PushContext;
}

function configStatus(c: Connection, typeUrl: string): ConfigStatus {
  switch (syncStatus(c.watched(typeUrl))) {
    case 'SYNCED':
      return ConfigStatus.SYNCED;
    case 'NACKED':
      return ConfigStatus.ERROR;
    case 'STALE':
      return ConfigStatus.STALE;
    case 'NOT SENT':
      return ConfigStatus.NOT_SENT;
  }
}

/**
 * istio.io/debug/syncz as istiod's StatusGen serves it: one envoy.service.status.v3.ClientConfig
 * per connected proxy (named by node id) with a GenericXdsConfig status per watched xDS type.
 */
export function synczGenerator(ds: DebugServerView, access?: XdsDebugAccess, log?: Logger, clusterId?: string): Generator {
  return {
    generate(proxy): readonly XdsResource[] {
      const scope = allowedScope(proxy, access, log);
      if (!scope) return [];
      const byProxy = new Map<string, XdsResource>();
      for (const c of [...ds.connectionList()].sort((a, b) => a.connectedAt - b.connectedAt)) {
        if (!inScope(scope, c.proxy)) continue;
        const md = c.proxy.metadata;
        const metadata: JsonObject = { NAMESPACE: c.proxy.namespace };
        // A proxy that names no cluster is served as one of this control plane's (istiod's isControllerForProxy).
        const cluster = md.clusterId ?? clusterId;
        if (cluster !== undefined) metadata.CLUSTER_ID = cluster;
        if (md.istioVersion !== undefined) metadata.ISTIO_VERSION = md.istioVersion;
        const ua = c.proxy.userAgent;
        const cc = create(ClientConfigSchema, {
          // The user agent lets a client show the data plane's own version where ISTIO_VERSION is missing (stock Envoy, gRPC).
          node: { id: c.proxy.id, metadata, ...(ua ? { userAgentName: ua.name, userAgentVersionType: ua.versionType } : {}) },
          // The types this proxy watches (istiod's StatusGen), with when each was last sent.
          genericXdsConfigs: c
            .watchedTypes()
            .filter((w) => !w.typeUrl.startsWith(DEBUG_TYPE_PREFIX))
            .sort((a, b) => (a.typeUrl < b.typeUrl ? -1 : 1))
            .map((w) => ({
              typeUrl: w.typeUrl,
              configStatus: configStatus(c, w.typeUrl),
              ...(w.lastSentAt !== undefined ? { lastUpdated: timestampFromMs(Math.floor(w.lastSentAt)) } : {}),
            })),
        });
        const any = anyPack(ClientConfigSchema, cc);
        byProxy.set(c.proxy.id, makeResource(c.proxy.id, any.typeUrl, any.value));
      }
      return [...byProxy.values()];
    },
  };
}

/**
 * istio.io/debug/config_dump as istiod serves it: the subscribed name is a proxyID; the answer is
 * the ConfigDump's configs (ClustersConfigDump, ListenersConfigDump, …) as resources. A request
 * for no proxy, several, or an unknown one gets no resources.
 */
export function configDumpGenerator(ds: DebugServerView, generators: GeneratorRegistry, access?: XdsDebugAccess, log?: Logger): Generator {
  return {
    generate(proxy, watched, push): readonly XdsResource[] {
      const scope = allowedScope(proxy, access, log);
      if (!scope || watched.names.size !== 1) return [];
      const [proxyID = ''] = watched.names;
      const conn = findConnection(ds.connectionList(), proxyID);
      // Another namespace's proxy looks like an unknown one (istiod's getDebugConnection).
      if (!conn || !inScope(scope, conn.proxy)) return [];
      const dump = buildConfigDump(conn, push, generators, { now: Date.now() });
      return dump.configs.map((a) => makeResource(a.typeUrl, a.typeUrl, a.value));
    },
  };
}

/** Streams already told (in our log) that they get no debug data: one warning each, not one per push. */
const warnedStreams = new WeakSet<Proxy>();

/**
 * The scope the asking stream may see; undefined (and one warning) when it may see nothing. istiod
 * ends such a stream with UNAUTHENTICATED; a generator here can only answer, so it answers empty.
 */
function allowedScope(proxy: Proxy, access: XdsDebugAccess | undefined, log: Logger | undefined): DebugScope | undefined {
  if (!access) return { all: true };
  const d = access(proxy);
  if (d.ok) return d.scope;
  if (!warnedStreams.has(proxy)) {
    warnedStreams.add(proxy);
    log?.warn('proxy is not authorized to receive debug info', { proxy: proxy.id, reason: d.reason });
  }
  return undefined;
}

export interface DebugGeneratorOptions {
  /** Who may read what (without it: everyone everything, for tests and embedding). */
  readonly access?: XdsDebugAccess;
  readonly logger?: Logger;
  /** The control plane's cluster (--clusterID): syncz's CLUSTER_ID for a proxy whose node names none. */
  readonly clusterId?: string;
}

/** Registers the xDS debug types on `registry` (the server's own registry, after the server exists). */
export function registerDebugGenerators(
  registry: GeneratorRegistry,
  ds: DebugServerView,
  opts: DebugGeneratorOptions = {},
): GeneratorRegistry {
  return registry
    .register(TypeUrl.DebugSyncz, synczGenerator(ds, opts.access, opts.logger, opts.clusterId))
    .register(TypeUrl.DebugConfigDump, configDumpGenerator(ds, registry, opts.access, opts.logger));
}
