import { timestampDate } from '@bufbuild/protobuf/wkt';
import { ConfigStatus, type ClientConfig } from '../../gen/envoy/service/status/v3/csds_pb.js';
import { tabwrite } from './tabwriter.js';

const T = 'type.googleapis.com/';
export const CDS = `${T}envoy.config.cluster.v3.Cluster`;
export const LDS = `${T}envoy.config.listener.v3.Listener`;
export const EDS = `${T}envoy.config.endpoint.v3.ClusterLoadAssignment`;
export const RDS = `${T}envoy.config.route.v3.RouteConfiguration`;
export const ECDS = `${T}envoy.config.core.v3.TypedExtensionConfig`;

/** Istio's GetShortType names; other types print as their URL. */
const SHORT: Record<string, string> = {
  [CDS]: 'CDS',
  [LDS]: 'LDS',
  [EDS]: 'EDS',
  [RDS]: 'RDS',
  [ECDS]: 'ECDS',
  [`${T}envoy.extensions.transport_sockets.tls.v3.Secret`]: 'SDS',
  [`${T}istio.networking.nds.v1.NameTable`]: 'NDS',
  [`${T}istio.mesh.v1alpha1.ProxyConfig`]: 'PCDS',
};

export function shortTypeName(typeUrl: string): string {
  return SHORT[typeUrl] ?? typeUrl;
}

/** One proxy as one control-plane replica reports it (a ClientConfig of istio.io/debug/syncz). */
export interface ProxyStatusRow {
  readonly proxyID: string;
  readonly clusterID: string;
  /** The replica that reported it (its control-plane identifier, else the address asked). */
  readonly istiod: string;
  readonly version: string;
  /** typeUrl → status text as istioctl prints it (`SYNCED (3m2s)`, `STALE`, `NOT SENT`, `ERROR`, `IGNORED`). */
  readonly types: ReadonlyMap<string, string>;
}

const IGNORED = 'IGNORED';

/** k8s' duration.HumanDuration, which istioctl uses for the age of a status. */
export function humanDuration(ms: number): string {
  const seconds = Math.trunc(ms / 1000);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.trunc(seconds / 60);
  if (minutes < 10) {
    const s = seconds % 60;
    return s === 0 ? `${minutes}m` : `${minutes}m${s}s`;
  }
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.trunc(minutes / 60);
  if (hours < 8) {
    const m = minutes % 60;
    return m === 0 ? `${hours}h` : `${hours}h${m}m`;
  }
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8) {
    const h = hours % 24;
    return h === 0 ? `${Math.trunc(hours / 24)}d` : `${Math.trunc(hours / 24)}d${h}h`;
  }
  if (hours < 24 * 365 * 2) return `${Math.trunc(hours / 24)}d`;
  if (hours < 24 * 365 * 8) {
    const dy = Math.trunc(hours / 24) % 365;
    return dy === 0 ? `${Math.trunc(hours / 24 / 365)}y` : `${Math.trunc(hours / 24 / 365)}y${dy}d`;
  }
  return `${Math.trunc(hours / 24 / 365)}y`;
}

/** istioctl's formatStatus: UNKNOWN is IGNORED, NOT_SENT is `NOT SENT`, others their name plus the age of last_updated. */
export function statusText(status: ConfigStatus, lastUpdated: Date | undefined, now: Date): string {
  if (status === ConfigStatus.UNKNOWN) return IGNORED;
  if (status === ConfigStatus.NOT_SENT) return 'NOT SENT';
  const name = ConfigStatus[status] ?? String(status);
  return lastUpdated ? `${name} (${humanDuration(now.getTime() - lastUpdated.getTime())})` : name;
}

function metaString(cc: ClientConfig, key: string): string {
  const v = cc.node?.metadata?.[key];
  return typeof v === 'string' ? v : '';
}

/**
 * istiod's proxy ID, which istioctl's NAME shows: `<pod>.<namespace>` of a node id
 * (`sidecar~10.1.0.5~reviews-v1-1.default~default.svc.cluster.local`); anything else as it is.
 */
export function proxyIdOf(nodeId: string): string {
  const parts = nodeId.split('~');
  return parts.length === 4 && parts[2] !== undefined && parts[2] !== '' ? parts[2] : nodeId;
}

/** The node's user agent as `name/version` (`envoy/1.40.0`, `grpc-node-js/1.14.7`), '' without one. */
export function userAgentOf(node: ClientConfig['node']): string {
  if (!node) return '';
  const v = node.userAgentVersionType;
  let version = '';
  if (v.case === 'userAgentVersion') version = v.value;
  else if (v.case === 'userAgentBuildVersion' && v.value.version)
    version = `${v.value.version.majorNumber}.${v.value.version.minorNumber}.${v.value.version.patch}`;
  if (node.userAgentName === '') return version;
  return version === '' ? node.userAgentName : `${node.userAgentName}/${version}`;
}

/**
 * A syncz ClientConfig as a row. VERSION is the proxy's ISTIO_VERSION, as in current istioctl; a
 * proxy that sends none (stock Envoy, proxyless gRPC) shows its user agent and version instead.
 */
export function statusRow(cc: ClientConfig, istiod: string, now: Date): ProxyStatusRow {
  const types = new Map<string, string>();
  for (const g of cc.genericXdsConfigs)
    types.set(g.typeUrl, statusText(g.configStatus, g.lastUpdated ? timestampDate(g.lastUpdated) : undefined, now));
  const version = metaString(cc, 'ISTIO_VERSION') || userAgentOf(cc.node);
  return { proxyID: proxyIdOf(cc.node?.id ?? ''), clusterID: metaString(cc, 'CLUSTER_ID'), istiod, version, types };
}

/** Types seen on any row: CDS, LDS, EDS, RDS first (legacy order), then the rest by URL. */
function seenTypes(rows: readonly ProxyStatusRow[]): string[] {
  const all = new Set(rows.flatMap((r) => [...r.types.keys()]));
  const core = [CDS, LDS, EDS, RDS].filter((t) => all.has(t));
  return [...core, ...[...all].filter((t) => !core.includes(t)).sort()];
}

function byProxy(rows: readonly ProxyStatusRow[]): ProxyStatusRow[] {
  return [...rows].sort((a, b) => (a.proxyID < b.proxyID ? -1 : a.proxyID > b.proxyID ? 1 : 0));
}

/**
 * `istioctl proxy-status`: NAME, CLUSTER, ISTIOD, VERSION, SUBSCRIBED TYPES (`4 (CDS,LDS,EDS,RDS)`:
 * the types whose status is not IGNORED). Rows from several replicas are merged and sorted by proxy.
 */
export function formatProxyStatus(rows: readonly ProxyStatusRow[]): string {
  const types = seenTypes(rows);
  const table = [['NAME', 'CLUSTER', 'ISTIOD', 'VERSION', 'SUBSCRIBED TYPES']];
  for (const r of byProxy(rows)) {
    const subscribed = types.filter((t) => (r.types.get(t) ?? IGNORED) !== IGNORED).map(shortTypeName);
    table.push([
      r.proxyID,
      r.clusterID,
      r.istiod,
      r.version,
      subscribed.length === 0 ? '0' : `${subscribed.length} (${subscribed.join(',')})`,
    ]);
  }
  return tabwrite(table, 5);
}

/** `proxy-status -v`: a column per type (seen or core, CDS ECDS EDS LDS RDS … by URL), IGNORED where a proxy has none. */
export function formatProxyStatusVerbose(rows: readonly ProxyStatusRow[]): string {
  const types = [...new Set([...seenTypes(rows), CDS, LDS, EDS, RDS, ECDS])].sort();
  const table = [['NAME', 'CLUSTER', ...types.map(shortTypeName), 'ISTIOD', 'VERSION']];
  for (const r of byProxy(rows)) table.push([r.proxyID, r.clusterID, ...types.map((t) => r.types.get(t) ?? IGNORED), r.istiod, r.version]);
  return tabwrite(table, 5);
}
