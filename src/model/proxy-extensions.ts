/**
 * What a proxy's Envoy can load, parsed once from its node. Envoy lists every extension it was
 * built with in Node.extensions (name + category) on its first request; Istio's proxy build
 * (istio-proxy) adds Istio's own (`istio.metadata_exchange`, `istio.alpn`, `istio.stats`), stock
 * Envoy has none of them and rejects a whole listener or cluster that names one. A node that lists
 * nothing is taken for istio-proxy, as istiod does (it never reads the list).
 */
import type { Node } from '../gen/envoy/config/core/v3/base_pb.js';

/** The Istio-proxy extensions meshpilot generates, and what stock Envoy gets instead. */
export const ISTIO_PROXY_EXTENSIONS = {
  'istio.metadata_exchange': 'no peer metadata exchange (peer labels in telemetry)',
  'istio.alpn': 'no upstream ALPN override (the clusters\' TLS contexts keep their own ALPN list)',
  'istio.stats': 'no Istio standard metrics from Telemetry',
} as const;
export type IstioExtension = keyof typeof ISTIO_PROXY_EXTENSIONS;

export interface ProxyExtensions {
  /** Whether the node listed its extensions; when false the proxy is taken for istio-proxy. */
  readonly declared: boolean;
  /** `envoy` for Envoy builds (istio-proxy included), as the node says. */
  readonly userAgent?: string;
  /** `major.minor.patch` of the Envoy build, when the node says. */
  readonly buildVersion?: string;
  /** The Istio-proxy extensions this proxy cannot load (none for istio-proxy). */
  readonly lacking: readonly IstioExtension[];
  /** Whether the proxy can load `name` (an Istio-proxy extension or any other it listed). */
  supports(name: string): boolean;
  /**
   * The part of a cache key for what the proxy supports: '' for istio-proxy, else the Istio
   * extensions it lacks. Shared builds that place Istio extensions key on it.
   */
  readonly key: string;
}

const ISTIO_PROXY: ProxyExtensions = { declared: false, lacking: [], supports: () => true, key: '' };

export function parseProxyExtensions(node: Pick<Node, 'extensions' | 'userAgentName' | 'userAgentVersionType'>): ProxyExtensions {
  const names = new Set(node.extensions.map((e) => e.name));
  const v = node.userAgentVersionType.case === 'userAgentBuildVersion' ? node.userAgentVersionType.value.version : undefined;
  const about = {
    ...(node.userAgentName !== '' ? { userAgent: node.userAgentName } : {}),
    ...(v ? { buildVersion: `${v.majorNumber}.${v.minorNumber}.${v.patch}` } : {}),
  };
  if (names.size === 0) return { ...ISTIO_PROXY, ...about };
  const lacking = (Object.keys(ISTIO_PROXY_EXTENSIONS) as IstioExtension[]).filter((n) => !names.has(n));
  return { declared: true, ...about, lacking, supports: (name) => names.has(name), key: lacking.length === 0 ? '' : `lacks:${lacking.join(',')}` };
}

/** One line for logs and /debug/syncz: what a proxy that lacks Istio extensions gets instead; undefined when it lacks none. */
export function lackingSummary(x: ProxyExtensions): string | undefined {
  if (x.lacking.length === 0) return undefined;
  const who = `${x.userAgent ?? 'proxy'}${x.buildVersion ? ` ${x.buildVersion}` : ''}`;
  return `${who} lacks ${x.lacking.join(', ')}: generated without them (${x.lacking.map((n) => ISTIO_PROXY_EXTENSIONS[n]).join('; ')})`;
}
