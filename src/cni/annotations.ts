import { parse as parseYaml } from 'yaml';
import { MeshError } from '../util/errors.js';
import {
  ISTIO_IPTABLES_DEFAULTS,
  parseBoolOption,
  resolveCaptureConfig,
  type CaptureConfig,
  type CaptureInput,
  type CaptureOption,
} from './iptables/config.js';
import { splitList } from './iptables/values.js';
import { ipv6Enabled, type PodAddress } from './probe.js';
import { INTERCEPTION_MODE_ANNOTATION, PROXY_CONFIG_ANNOTATION } from '../config/constants.js';

/**
 * The CNI plugin's capture config, derived from the pod as istio-cni does
 * (cni/pkg/plugin/sidecar_redirect.go NewRedirect + sidecar_iptables_linux.go Program).
 */

export const ANNOTATIONS = {
  includeOutboundIPRanges: 'traffic.sidecar.istio.io/includeOutboundIPRanges',
  excludeOutboundIPRanges: 'traffic.sidecar.istio.io/excludeOutboundIPRanges',
  includeInboundPorts: 'traffic.sidecar.istio.io/includeInboundPorts',
  excludeInboundPorts: 'traffic.sidecar.istio.io/excludeInboundPorts',
  includeOutboundPorts: 'traffic.sidecar.istio.io/includeOutboundPorts',
  excludeOutboundPorts: 'traffic.sidecar.istio.io/excludeOutboundPorts',
  excludeInterfaces: 'traffic.sidecar.istio.io/excludeInterfaces',
  kubevirtInterfaces: 'traffic.sidecar.istio.io/kubevirtInterfaces',
  rerouteVirtualInterfaces: 'istio.io/reroute-virtual-interfaces',
  interceptionMode: INTERCEPTION_MODE_ANNOTATION,
  proxyConfig: PROXY_CONFIG_ANNOTATION,
} as const;

/** Ports the agent and Envoy serve that inbound capture always leaves alone (istio-cni appends them). */
const ALWAYS_EXCLUDED_INBOUND = '15020,15021,15090';

export interface AnnotationDefaults {
  /** The pod's addresses (the CNI prevResult's IPs): IPv6 is programmed as Istio decides from them. */
  readonly addresses: readonly PodAddress[];
  /** The sidecar's runAsUser/runAsGroup when set and non-zero; else 1337. */
  readonly proxyUid?: number;
  readonly proxyGid?: number;
  /** The sidecar container's env: ISTIO_META_DNS_CAPTURE, ISTIO_DUAL_STACK, INVALID_DROP. */
  readonly proxyEnv?: Readonly<Record<string, string>>;
  /** Overrides of istio-cni's defaults where the pod says nothing (e.g. ports from plugin config). */
  readonly base?: Partial<CaptureInput>;
}

/** istio-cni's defaults for an unannotated pod: capture everything but the agent's status port. */
export const CNI_DEFAULTS: Readonly<CaptureInput> = Object.freeze({
  ...ISTIO_IPTABLES_DEFAULTS,
  interceptionMode: 'REDIRECT',
  outboundIpRanges: '*',
  outboundIpRangesExclude: '',
  inboundPorts: '*',
  inboundPortsExclude: '15020',
  outboundPorts: '',
  outboundPortsExclude: '15020',
});

function dedupe(list: string): string {
  return [...new Set(splitList(list))].join(',');
}

/** ISTIO_META_DNS_CAPTURE from proxy.istio.io/config's proxyMetadata, if the annotation sets it. */
function dnsFromProxyConfig(text: string): string | undefined {
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (err) {
    throw new MeshError(
      'INVALID_ARGUMENT',
      `invalid ${ANNOTATIONS.proxyConfig} annotation: not YAML/JSON: ${(err as Error).message.split('\n')[0]}`,
    );
  }
  if (doc === null || doc === undefined) return undefined;
  if (typeof doc !== 'object' || Array.isArray(doc))
    throw new MeshError('INVALID_ARGUMENT', `invalid ${ANNOTATIONS.proxyConfig} annotation: must be a ProxyConfig object`);
  const meta = (doc as { proxyMetadata?: unknown }).proxyMetadata;
  if (meta === undefined) return undefined;
  if (typeof meta !== 'object' || meta === null || Array.isArray(meta)) {
    throw new MeshError('INVALID_ARGUMENT', `invalid ${ANNOTATIONS.proxyConfig} annotation: proxyMetadata must be a map of strings`);
  }
  const v = (meta as Record<string, unknown>).ISTIO_META_DNS_CAPTURE;
  return v === undefined ? undefined : String(v);
}

/**
 * The validated capture config for a pod. An invalid annotation throws MeshError(INVALID_ARGUMENT)
 * naming the annotation and its value (the CNI plugin turns that into a CNI error, nothing applied).
 */
export function captureConfigFromAnnotations(annotations: Readonly<Record<string, string>>, defaults: AnnotationDefaults): CaptureConfig {
  const base: CaptureInput = { ...CNI_DEFAULTS, ...defaults.base };
  const labels: Partial<Record<CaptureOption, string>> = {};
  const pick = (option: CaptureOption, key: string): string => {
    const v = annotations[key];
    if (v === undefined) return base[option] as string;
    labels[option] = `${key} annotation`;
    return v;
  };
  const input: CaptureInput = { ...base };
  input.interceptionMode = pick('interceptionMode', ANNOTATIONS.interceptionMode);
  input.outboundIpRanges = pick('outboundIpRanges', ANNOTATIONS.includeOutboundIPRanges);
  input.outboundIpRangesExclude = pick('outboundIpRangesExclude', ANNOTATIONS.excludeOutboundIPRanges);
  input.inboundPorts = pick('inboundPorts', ANNOTATIONS.includeInboundPorts);
  input.outboundPorts = pick('outboundPorts', ANNOTATIONS.includeOutboundPorts);
  input.outboundPortsExclude = pick('outboundPortsExclude', ANNOTATIONS.excludeOutboundPorts);
  input.excludeInterfaces = pick('excludeInterfaces', ANNOTATIONS.excludeInterfaces);
  // The deprecated kubevirtInterfaces only counts when reroute-virtual-interfaces is absent.
  input.rerouteVirtualInterfaces =
    annotations[ANNOTATIONS.rerouteVirtualInterfaces] !== undefined
      ? pick('rerouteVirtualInterfaces', ANNOTATIONS.rerouteVirtualInterfaces)
      : pick('rerouteVirtualInterfaces', ANNOTATIONS.kubevirtInterfaces);
  const excl = pick('inboundPortsExclude', ANNOTATIONS.excludeInboundPorts).trim();
  input.inboundPortsExclude = excl === '*' ? excl : dedupe(`${excl},${ALWAYS_EXCLUDED_INBOUND}`);

  input.proxyUid = defaults.proxyUid ? String(defaults.proxyUid) : '1337';
  input.proxyGid = defaults.proxyGid ? String(defaults.proxyGid) : '1337';

  const env = defaults.proxyEnv ?? {};
  const dnsAnnotation =
    annotations[ANNOTATIONS.proxyConfig] === undefined ? undefined : dnsFromProxyConfig(annotations[ANNOTATIONS.proxyConfig] ?? '');
  const dnsText = dnsAnnotation ?? env.ISTIO_META_DNS_CAPTURE;
  const dnsLabel =
    dnsAnnotation !== undefined ? `${ANNOTATIONS.proxyConfig} proxyMetadata.ISTIO_META_DNS_CAPTURE` : 'sidecar env ISTIO_META_DNS_CAPTURE';
  // The plugin cannot know the pod's resolv.conf servers: DNS capture means all of port 53.
  input.redirectDns = dnsText === undefined ? base.redirectDns : parseBoolOption(dnsLabel, dnsText);
  input.captureAllDns = input.redirectDns;
  if (env.INVALID_DROP !== undefined) input.dropInvalid = parseBoolOption('sidecar env INVALID_DROP', env.INVALID_DROP);
  const dualStack = env.ISTIO_DUAL_STACK !== undefined && parseBoolOption('sidecar env ISTIO_DUAL_STACK', env.ISTIO_DUAL_STACK);
  input.enableIPv6 = ipv6Enabled(defaults.addresses, dualStack);
  input.dnsServers = [];
  return resolveCaptureConfig(input, labels);
}
