import { lackingSummary } from '../../model/index.js';
import type { Connection } from '../connection.js';
import { TypeUrl, shortType } from '../type-urls.js';
import type { WatchedResource } from '../watched-resource.js';

export type SyncStatus = 'SYNCED' | 'NACKED' | 'STALE' | 'NOT SENT';

/**
 * istiod's per-type sync state (istioctl proxy-status): SYNCED = the last response was ACKed,
 * NACKED = the last response was rejected, STALE = sent and not answered yet, NOT SENT.
 */
export function syncStatus(w: WatchedResource | undefined): SyncStatus {
  if (!w?.nonceSent) return 'NOT SENT';
  if (w.nonceAcked === w.nonceSent) return 'SYNCED';
  if (w.lastError?.nonce === w.nonceSent) return 'NACKED';
  return 'STALE';
}

export interface TypeSync {
  readonly status: SyncStatus;
  readonly nonceSent: string;
  readonly nonceAcked: string;
  readonly versionSent: string;
  readonly versionAcked: string;
  readonly resourceNames: readonly string[];
  readonly lastNack?: { readonly nonce: string; readonly message: string; readonly at: string };
}

/**
 * One entry of /debug/syncz: istiod's SyncStatus fields (nonces per xDS type, omitted when empty)
 * plus meshpilot's per-type detail under `types` (status, versions, names, last NACK).
 */
export interface SyncEntry {
  readonly cluster_id?: string;
  readonly proxy: string;
  readonly proxy_type: string;
  readonly istio_version?: string;
  readonly cluster_sent?: string;
  readonly cluster_acked?: string;
  readonly listener_sent?: string;
  readonly listener_acked?: string;
  readonly route_sent?: string;
  readonly route_acked?: string;
  readonly endpoint_sent?: string;
  readonly endpoint_acked?: string;
  readonly connection: string;
  readonly peer: string;
  readonly connectedAt: string;
  /** Set when the proxy lacks Istio-proxy extensions (stock Envoy): what its config is generated without. */
  readonly extensions?: string;
  readonly types: Readonly<Record<string, TypeSync>>;
}

const optional = <K extends string>(k: K, v: string | undefined): { [P in K]?: string } =>
  (v === undefined ? {} : { [k]: v }) as { [P in K]?: string };

function typeSync(w: WatchedResource): TypeSync {
  return {
    status: syncStatus(w),
    nonceSent: w.nonceSent ?? '',
    nonceAcked: w.nonceAcked ?? '',
    versionSent: w.versionSent ?? '',
    versionAcked: w.versionAcked ?? '',
    resourceNames: w.wildcard ? ['*'] : [...w.names].sort(),
    ...(w.lastError
      ? { lastNack: { nonce: w.lastError.nonce, message: w.lastError.message, at: new Date(w.lastError.at).toISOString() } }
      : {}),
  };
}

function nonces(c: Connection, typeUrl: string, sentKey: string, ackedKey: string): Record<string, string> {
  const w = c.watched(typeUrl);
  const out: Record<string, string> = {};
  if (w?.nonceSent) out[sentKey] = w.nonceSent;
  if (w?.nonceAcked) out[ackedKey] = w.nonceAcked;
  return out;
}

export function syncEntry(c: Connection): SyncEntry {
  const md = c.proxy.metadata;
  return {
    ...(md.clusterId !== undefined ? { cluster_id: md.clusterId } : {}),
    proxy: c.proxy.id,
    proxy_type: c.proxy.type,
    ...(md.istioVersion !== undefined ? { istio_version: md.istioVersion } : {}),
    ...nonces(c, TypeUrl.Cluster, 'cluster_sent', 'cluster_acked'),
    ...nonces(c, TypeUrl.Listener, 'listener_sent', 'listener_acked'),
    ...nonces(c, TypeUrl.RouteConfiguration, 'route_sent', 'route_acked'),
    ...nonces(c, TypeUrl.ClusterLoadAssignment, 'endpoint_sent', 'endpoint_acked'),
    connection: c.id,
    peer: c.peer,
    connectedAt: new Date(c.connectedAt).toISOString(),
    ...optional('extensions', lackingSummary(c.proxy.extensions)),
    types: Object.fromEntries(c.watchedTypes().map((w) => [shortType(w.typeUrl), typeSync(w)])),
  };
}

/** /debug/syncz: every connection, ordered by connection id. */
export function syncz(conns: readonly Connection[]): SyncEntry[] {
  return [...conns].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)).map(syncEntry);
}

/**
 * The connection a debug `proxyID` names, as istiod resolves it: the full node id, the connection
 * id, or the `<pod>.<namespace>` part; failing those, a connection id containing it. The newest
 * connection wins when a proxy has several.
 */
export function findConnection(conns: readonly Connection[], proxyID: string): Connection | undefined {
  if (proxyID === '') return undefined;
  const newestFirst = [...conns].sort((a, b) => b.connectedAt - a.connectedAt);
  return (
    newestFirst.find((c) => c.proxy.id === proxyID || c.id === proxyID) ??
    newestFirst.find((c) => c.proxy.podName === proxyID) ??
    newestFirst.find((c) => c.id.includes(proxyID))
  );
}
