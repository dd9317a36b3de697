/**
 * What a proxy's Envoy can load, parsed once from its node. Envoy lists every extension it was
 * built with in Node.extensions on its first request — name, category and the config types each
 * accepts. Envoy finds a filter's factory by its config type (for a udpa TypedStruct, the type
 * inside), so that is what is checked: Istio's proxy build (istio-proxy) accepts the configs of
 * Istio's own filters, stock Envoy does not and rejects a whole listener or cluster naming one. A
 * node that lists nothing (or no config types at all) is taken for istio-proxy, as istiod does.
 */
import type { Node } from '../gen/envoy/config/core/v3/base_pb.js';

interface IstioExtensionInfo {
  /** Config types Envoy must accept for meshpilot to send the filter (all of them). */
  readonly configTypes: readonly string[];
  /** What a proxy without it goes without. */
  readonly without: string;
}

/** The Istio-proxy filters meshpilot generates, by the name its config gives them. */
export const ISTIO_PROXY_EXTENSIONS = {
  'istio.metadata_exchange': {
    configTypes: ['io.istio.http.peer_metadata.Config', 'envoy.tcp.metadataexchange.config.MetadataExchange'],
    without: 'no peer metadata exchange (peer labels in telemetry; access log peer operators print -)',
  },
  'istio.alpn': {
    configTypes: ['istio.envoy.config.filter.http.alpn.v2alpha1.FilterConfig'],
    without: "no upstream ALPN override (the clusters' TLS contexts keep their own ALPN list)",
  },
  'istio.stats': {
    configTypes: ['stats.PluginConfig'],
    without: 'no Istio standard metrics from Telemetry',
  },
} as const satisfies Record<string, IstioExtensionInfo>;
export type IstioExtension = keyof typeof ISTIO_PROXY_EXTENSIONS;

export interface ProxyExtensions {
  /** Whether the node listed the config types it accepts; when false the proxy is taken for istio-proxy. */
  readonly declared: boolean;
  /** `envoy` for Envoy builds (istio-proxy included), as the node says. */
  readonly userAgent?: string;
  /** `major.minor.patch` of the Envoy build, when the node says. */
  readonly buildVersion?: string;
  /** The Istio-proxy filters this proxy cannot load (none for istio-proxy). */
  readonly lacking: readonly IstioExtension[];
  supports(ext: IstioExtension): boolean;
  /**
   * The part of a cache key for what the proxy supports: '' for istio-proxy, else the Istio
   * filters it lacks. Shared builds that place Istio filters key on it.
   */
  readonly key: string;
}

export function parseProxyExtensions(node: Pick<Node, 'extensions' | 'userAgentName' | 'userAgentVersionType'>): ProxyExtensions {
  const types = new Set(node.extensions.flatMap((e) => e.typeUrls));
  const v = node.userAgentVersionType.case === 'userAgentBuildVersion' ? node.userAgentVersionType.value.version : undefined;
  const about = {
    ...(node.userAgentName !== '' ? { userAgent: node.userAgentName } : {}),
    ...(v ? { buildVersion: `${v.majorNumber}.${v.minorNumber}.${v.patch}` } : {}),
  };
  const declared = types.size > 0;
  const has = (ext: IstioExtension): boolean => !declared || ISTIO_PROXY_EXTENSIONS[ext].configTypes.every((t) => types.has(t));
  const lacking = (Object.keys(ISTIO_PROXY_EXTENSIONS) as IstioExtension[]).filter((x) => !has(x));
  return { declared, ...about, lacking, supports: has, key: lacking.length === 0 ? '' : `lacks:${lacking.join(',')}` };
}

/** One line for logs and /debug/syncz: what a proxy that lacks Istio filters gets its config without; undefined when it lacks none. */
export function lackingSummary(x: ProxyExtensions): string | undefined {
  if (x.lacking.length === 0) return undefined;
  const who = `${x.userAgent ?? 'proxy'}${x.buildVersion ? ` ${x.buildVersion}` : ''}`;
  return `${who} lacks ${x.lacking.join(', ')}: generated without them (${x.lacking.map((n) => ISTIO_PROXY_EXTENSIONS[n].without).join('; ')})`;
}
