import { create, fromBinary, toJson, type DescMessage, type MessageShape } from '@bufbuild/protobuf';
import { stringify } from 'yaml';
import { BootstrapConfigDumpSchema, ConfigDumpSchema, SecretsConfigDumpSchema } from '../../gen/envoy/admin/v3/config_dump_pb.js';
import { ClusterSchema } from '../../gen/envoy/config/cluster/v3/cluster_pb.js';
import { ClusterLoadAssignmentSchema } from '../../gen/envoy/config/endpoint/v3/endpoint_pb.js';
import { ListenerSchema } from '../../gen/envoy/config/listener/v3/listener_pb.js';
import { RouteConfigurationSchema } from '../../gen/envoy/config/route/v3/route_pb.js';
import { xdsJsonRegistry } from '../../model/index.js';
import { clusterMatches, formatClusters, sortClusters, type ClusterFilter } from './cluster-format.js';
import { formatEndpoints, formatEndpointsSummary, type EndpointFilter } from './endpoint-format.js';
import { formatListeners, listenerMatches, type ListenerFilter } from './listener-format.js';
import { configDumpOf, decodeConfigDump, type ProxyConfigData } from './proxy-config-data.js';
import { formatRoutes, type RouteFilter } from './route-format.js';
import { formatSecrets } from './secret-format.js';
import { userAgentOf } from './status-format.js';
import { tabwrite } from './tabwriter.js';
import { CONFIG_DUMP_TYPE, xdsDebugRequest, type XdsDebugOptions } from './xds-debug-client.js';
import { MeshError } from '../../util/errors.js';

export const PROXY_CONFIG_KINDS = ['cluster', 'listener', 'route', 'endpoint', 'secret', 'bootstrap', 'all'] as const;
export type ProxyConfigKind = (typeof PROXY_CONFIG_KINDS)[number];
export type ProxyConfigOutput = 'short' | 'json' | 'yaml';

export interface RenderOptions {
  readonly output?: ProxyConfigOutput;
  readonly cluster?: ClusterFilter;
  readonly listener?: ListenerFilter;
  readonly route?: RouteFilter;
  readonly endpoint?: EndpointFilter;
  /** proxy-config all: `------ CLUSTER INFO ------` banners. */
  readonly withHeaders?: boolean;
  /** Clock for VALID CERT. */
  readonly now?: Date;
}

/** Asks the control plane for the proxy's config dump (istio.io/debug/config_dump?proxyID=…). */
export async function fetchProxyConfig(conn: XdsDebugOptions, proxyID: string): Promise<ProxyConfigData> {
  return fetchProxyConfigFrom([conn.address], conn, proxyID);
}

/** With several replicas, the first that has the proxy connected answers (the others return nothing). */
export async function fetchProxyConfigFrom(
  addresses: readonly string[],
  conn: Omit<XdsDebugOptions, 'address'>,
  proxyID: string,
): Promise<ProxyConfigData> {
  for (const address of addresses) {
    const resp = await xdsDebugRequest({ ...conn, address }, CONFIG_DUMP_TYPE, [proxyID]);
    if (resp.resources.length > 0) return decodeConfigDump(configDumpOf(resp.resources));
  }
  throw new MeshError(
    'NOT_FOUND',
    `proxy "${proxyID}" is not connected to ${addresses.join(', ')}: pass a name that meshctl proxy-status lists`,
  );
}

/** istioctl marshals message lists as proto JSON re-indented by 4 spaces, or as YAML. */
function dumpList<D extends DescMessage>(schema: D, msgs: readonly MessageShape<D>[], output: 'json' | 'yaml'): string {
  const registry = xdsJsonRegistry();
  const json = msgs.map((m) => toJson(schema, m, { registry }));
  return output === 'json' ? `${JSON.stringify(json, undefined, 4)}\n` : `${stringify(json)}\n`;
}

function dumpOne<D extends DescMessage>(schema: D, msg: MessageShape<D>, output: 'json' | 'yaml'): string {
  const json = toJson(schema, msg, { registry: xdsJsonRegistry() });
  return output === 'json' ? `${JSON.stringify(json, undefined, 4)}\n` : `${stringify(json)}\n`;
}

/** istioctl's bootstrap summary (versions from the bootstrap node); tabwriter padding 1. */
function bootstrapSummary(data: ProxyConfigData): string {
  const node = data.bootstrap?.bootstrap?.node;
  const md = node?.metadata ?? {};
  const rows: string[][] = [];
  if (typeof md.ISTIO_VERSION === 'string' && md.ISTIO_VERSION !== '') rows.push(['Istio Version:', md.ISTIO_VERSION]);
  if (typeof md.ISTIO_PROXY_SHA === 'string' && md.ISTIO_PROXY_SHA !== '')
    rows.push(['Istio Proxy Version:', md.ISTIO_PROXY_SHA.split(':')[1] ?? md.ISTIO_PROXY_SHA]);
  const build = node?.userAgentVersionType.case === 'userAgentBuildVersion' ? node.userAgentVersionType.value : undefined;
  const v = build?.version;
  if (v) rows.push(['Envoy Version:', `${v.majorNumber}.${v.minorNumber}.${v.patch}`]);
  // A client that is no Envoy (proxyless gRPC: a version string) is named by its user agent.
  else if (userAgentOf(node) !== '') rows.push(['Client Version:', userAgentOf(node)]);
  else rows.push(['Envoy Version:', 'unknown (the proxy sent no user agent)']);
  return tabwrite(rows, 1);
}

function requireSome<T>(items: readonly T[] | undefined, what: string): readonly T[] {
  if (!items || items.length === 0) throw new MeshError('NOT_FOUND', `no ${what} found`);
  return items;
}

/** The text `meshctl proxy-config KIND` prints for a decoded config dump. */
export function renderProxyConfig(kind: ProxyConfigKind, data: ProxyConfigData, opts: RenderOptions = {}): string {
  const output = opts.output ?? (kind === 'bootstrap' ? 'json' : 'short');
  const now = opts.now ?? new Date();
  if (output !== 'short') {
    switch (kind) {
      case 'cluster':
        return dumpList(
          ClusterSchema,
          sortClusters(requireSome(data.clusters, 'clusters')).filter((c) => clusterMatches(opts.cluster ?? {}, c)),
          output,
        );
      case 'listener':
        return dumpList(
          ListenerSchema,
          requireSome(data.listeners, 'listeners').filter((l) => listenerMatches(opts.listener ?? {}, l)),
          output,
        );
      case 'route':
        return dumpList(
          RouteConfigurationSchema,
          requireSome(data.routes, 'routes').filter((r) => !opts.route?.name || r.name === opts.route.name),
          output,
        );
      case 'endpoint':
        return dumpList(ClusterLoadAssignmentSchema, data.endpoints ?? [], output);
      case 'secret': {
        const section = data.dump.configs.find((a) => a.typeUrl.endsWith('.SecretsConfigDump'));
        return dumpOne(
          SecretsConfigDumpSchema,
          section ? fromBinary(SecretsConfigDumpSchema, section.value) : create(SecretsConfigDumpSchema),
          output,
        );
      }
      case 'bootstrap':
        return dumpOne(BootstrapConfigDumpSchema, data.bootstrap ?? create(BootstrapConfigDumpSchema), output);
      case 'all':
        return dumpOne(ConfigDumpSchema, data.dump, output);
    }
  }
  switch (kind) {
    case 'cluster':
      return formatClusters(requireSome(data.clusters, 'clusters'), opts.cluster);
    case 'listener':
      return formatListeners(requireSome(data.listeners, 'listeners'), opts.listener);
    case 'route':
      return formatRoutes(requireSome(data.routes, 'routes'), opts.route);
    case 'endpoint':
      return formatEndpoints(data.endpoints ?? [], opts.endpoint);
    case 'secret':
      return formatSecrets(data.secrets, now);
    case 'bootstrap':
      return bootstrapSummary(data);
    case 'all':
      return fullSummary(data, opts, now);
  }
}

/** istioctl's PrintFullSummary: bootstrap, clusters, listeners, routes, secrets, endpoints, each with its type prefix. */
function fullSummary(data: ProxyConfigData, opts: RenderOptions, now: Date): string {
  const banner = (s: string): string => (opts.withHeaders ? `------ ${s} ------\n\n` : '');
  return [
    banner('BOOTSTRAP INFO') + bootstrapSummary(data),
    banner('CLUSTER INFO') + formatClusters(requireSome(data.clusters, 'clusters'), opts.cluster, true),
    banner('LISTENER INFO') + formatListeners(requireSome(data.listeners, 'listeners'), opts.listener, true),
    banner('ROUTE INFO') + formatRoutes(requireSome(data.routes, 'routes'), opts.route, true),
    banner('SECRET INFO') + formatSecrets(data.secrets, now, true),
    banner('ENDPOINTS INFO') + formatEndpointsSummary(data.endpoints ?? [], opts.endpoint, true),
  ].join('\n');
}
