import { isIP } from 'node:net';
import type { JsonObject, JsonValue } from '@bufbuild/protobuf';
import type { Node } from '../gen/envoy/config/core/v3/base_pb.js';
import type { Locality } from '../registry/index.js';
import { MeshError } from '../util/errors.js';
import { fail, ok, type Result } from '../util/result.js';
import { parseProxyExtensions, type ProxyExtensions } from './proxy-extensions.js';

export type ProxyType = 'sidecar' | 'router' | 'waypoint' | 'ztunnel';
const PROXY_TYPES = new Set<string>(['sidecar', 'router', 'waypoint', 'ztunnel']);

/** Istio node metadata, as Istio's agent and proxyless gRPC bootstraps send it (ISTIO_META_*). */
export interface ProxyMetadata {
  /** `grpc` for proxyless gRPC; selects the generator set. */
  readonly generator?: string;
  readonly namespace?: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly clusterId?: string;
  readonly istioVersion?: string;
  readonly workloadName?: string;
  readonly meshId?: string;
  readonly interceptionMode?: string;
  /** ISTIO_META_NETWORK: the network the proxy is in ('' when not set: every network counts as its own). */
  readonly network: string;
  /**
   * ISTIO_META_REQUESTED_NETWORK_VIEW (comma-separated): the only networks whose endpoints it is sent
   * (endpoints without a network too); empty: every network.
   */
  readonly requestedNetworkView: readonly string[];
  /** Every metadata field as sent, for later issues and debug output. */
  readonly raw: JsonObject;
}

/** A connected proxy, parsed once from the first request's node. */
export interface Proxy {
  /** The node id as sent: `<type>~<ip>~<pod>.<ns>~<ns>.svc.<domain>`. */
  readonly id: string;
  readonly type: ProxyType;
  readonly ipAddresses: readonly string[];
  /** `<pod>.<namespace>` part of the id. */
  readonly podName: string;
  readonly namespace: string;
  /** DNS domain of the proxy (`<ns>.svc.cluster.local`). */
  readonly dnsDomain: string;
  readonly metadata: ProxyMetadata;
  readonly locality: Locality;
  readonly labels: Readonly<Record<string, string>>;
  /** The xDS node's `cluster` (Istio's agent: `<app>.<namespace>`): tracing's service name. */
  readonly cluster?: string;
  /** What the proxy's Envoy can load (istio-proxy unless the node lists its extensions). */
  readonly extensions: ProxyExtensions;
  /** The node's user agent (`envoy` and its build version, `grpc-node-js` and its version …), for debug output. */
  readonly userAgent?: UserAgent;
}

/** Node.user_agent_name and user_agent_version_type as sent (a build version or a version string). */
export interface UserAgent {
  readonly name: string;
  readonly versionType: Node['userAgentVersionType'];
}

/** `1.40.0` from a build version, the version string otherwise, '' when the node sent none. */
export function userAgentVersion(ua: UserAgent | undefined): string {
  const v = ua?.versionType;
  if (v?.case === 'userAgentVersion') return v.value;
  if (v?.case === 'userAgentBuildVersion') {
    const n = v.value.version;
    return n ? `${n.majorNumber}.${n.minorNumber}.${n.patch}` : '';
  }
  return '';
}

export function isProxyless(p: Proxy): boolean {
  return p.metadata.generator === 'grpc';
}

function str(v: JsonValue | undefined): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

function stringMap(v: JsonValue | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (v && typeof v === 'object' && !Array.isArray(v)) {
    for (const [k, val] of Object.entries(v)) if (typeof val === 'string') out[k] = val;
  }
  return out;
}

/**
 * The proxy's addresses: metadata INSTANCE_IPS (istio-agent sends every pod IP there, comma-separated,
 * the node id carrying only the first) when each is an IP, else the node id's (istiod's
 * ParseServiceNodeWithMetadata).
 */
function instanceIps(raw: JsonObject, idIps: string): string[] {
  const v = raw.INSTANCE_IPS;
  const listed = typeof v === 'string' ? v.split(',') : Array.isArray(v) ? v.map((x) => (typeof x === 'string' ? x : '')) : [];
  if (listed.length > 0 && listed.every((ip) => isIP(ip) !== 0)) return listed;
  return idIps.split(',').filter((s) => s !== '');
}

/**
 * Parses the xDS node. The id format is istiod's; a proxy that sends only metadata NAMESPACE still
 * works (metadata wins over the id for the namespace, as in istiod).
 */
export function parseProxy(node: Node | undefined): Result<Proxy, MeshError> {
  if (!node || node.id === '') return fail(new MeshError('INVALID_ARGUMENT', 'the first request on a stream must carry node.id'));
  const parts = node.id.split('~');
  if (parts.length !== 4) {
    return fail(new MeshError('INVALID_ARGUMENT', `node id "${node.id}" is not <type>~<ip>~<pod>.<namespace>~<namespace>.svc.<domain>`));
  }
  const [type = '', ips = '', pod = '', domain = ''] = parts;
  if (!PROXY_TYPES.has(type)) {
    return fail(
      new MeshError('INVALID_ARGUMENT', `node id "${node.id}": unknown proxy type "${type}" (sidecar, router, waypoint, ztunnel)`),
    );
  }
  const raw = node.metadata ?? {};
  const labels = stringMap(raw.LABELS);
  const idNamespace = pod.includes('.') ? pod.slice(pod.indexOf('.') + 1) : (domain.split('.')[0] ?? '');
  const namespace = str(raw.NAMESPACE) ?? idNamespace;
  if (namespace === '') return fail(new MeshError('INVALID_ARGUMENT', `node id "${node.id}": no namespace in id or metadata`));
  const metadata: ProxyMetadata = {
    labels,
    raw,
    ...opt('generator', str(raw.GENERATOR)),
    namespace,
    ...opt('clusterId', str(raw.CLUSTER_ID)),
    ...opt('istioVersion', str(raw.ISTIO_VERSION)),
    ...opt('workloadName', str(raw.WORKLOAD_NAME)),
    ...opt('meshId', str(raw.MESH_ID)),
    ...opt('interceptionMode', str(raw.INTERCEPTION_MODE)),
    network: str(raw.NETWORK) ?? '',
    requestedNetworkView: (str(raw.REQUESTED_NETWORK_VIEW) ?? '').split(',').filter((n) => n !== ''),
  };
  return ok({
    id: node.id,
    type: type as ProxyType,
    ipAddresses: instanceIps(raw, ips),
    podName: pod,
    namespace,
    dnsDomain: domain,
    metadata,
    locality: { region: node.locality?.region ?? '', zone: node.locality?.zone ?? '', subzone: node.locality?.subZone ?? '' },
    labels,
    ...opt('cluster', str(node.cluster)),
    extensions: parseProxyExtensions(node),
    ...(node.userAgentName !== '' || node.userAgentVersionType.case !== undefined
      ? { userAgent: { name: node.userAgentName, versionType: node.userAgentVersionType } }
      : {}),
  });
}

function opt<K extends string, V>(k: K, v: V | undefined): { [P in K]?: V } {
  return (v === undefined ? {} : { [k]: v }) as { [P in K]?: V };
}
