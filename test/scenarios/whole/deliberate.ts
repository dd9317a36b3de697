/**
 * The differences from istiod that meshpilot makes on purpose, each with its reason: the one list
 * the whole-resource comparison (istiod-whole.test.ts) accepts. An entry that no longer matches
 * anything fails the test (remove it).
 */
import type { Case } from './corpora.js';
import type { LeafDiff } from './leaves.js';

export interface Deliberate {
  readonly id: string;
  readonly reason: string;
  /** `corpus/scenario proxy` the entry applies to; all when absent. */
  readonly where?: RegExp;
  /** `type name` of the resource. */
  readonly resource?: RegExp;
  /** The leaf path (`''` for a resource present on one side only). */
  readonly path?: RegExp;
  readonly when?: (d: LeafDiff) => boolean;
}

export function explains(k: Deliberate, c: Case, d: LeafDiff): boolean {
  return (
    (k.where?.test(`${c.corpus}/${c.scenario} ${c.proxy}`) ?? true) &&
    (k.resource?.test(`${d.type} ${d.name}`) ?? true) &&
    (k.path?.test(d.path) ?? true) &&
    (k.when?.(d) ?? true)
  );
}

/** Whether `sub`'s ` | `-joined names appear in `all`'s in the same order (a list with some names left out). */
function subsequence(sub: string | undefined, all: string | undefined): boolean {
  const want = (sub ?? '').split(' | ');
  let i = 0;
  for (const n of (all ?? '').split(' | ')) if (n === want[i]) i++;
  return i === want.length;
}

export const DELIBERATE: readonly Deliberate[] = [
  {
    id: 'port-80-virtualservice-hosts',
    reason:
      'istiod adds to route config 80 a vhost <host>:80 for every VirtualService whose hosts have no HTTP service on port 80 — its own ' +
      'code calls this a hack for external hosts without a ServiceEntry; it routes to outbound|80|… clusters istiod never sends. ' +
      "meshpilot routes a VirtualService only on its services' ports",
    where: /^(bookinfo|envoyfilter)\//,
    resource: /^route 80$/,
    path: /^virtualHosts(\[[^\]]+:80\]|\.@order$)/,
    when: (d) => d.meshpilot === undefined || (d.path === 'virtualHosts.@order' && subsequence(d.meshpilot, d.istiod)),
  },
  {
    id: 'cares-dns-resolver',
    reason:
      "istiod gives DNS clusters c-ares' config (udp_max_queries 100); the Envoy API copy meshpilot encodes and validates with " +
      '(@grpc/grpc-js-xds) still requires a resolver address in it, so meshpilot leaves it out and Envoy resolves with its defaults',
    resource: /^cluster /,
    path: /^typedDnsResolverConfig\./,
    when: (d) => d.meshpilot === undefined,
  },
  {
    id: 'kubernetes-service-names',
    reason:
      "corpus: istiod's side ran on a Kubernetes API server, where a Service's telemetry name is its short name; meshpilot's " +
      'side gets the same services as ServiceEntries (gateway-api-fixture.ts), named by host',
    where: /^gateway-api\//,
    resource: /^cluster /,
    path: /^metadata\.filterMetadata\.istio\.services\[/,
  },
  {
    id: 'gateway-pod-service-account',
    reason:
      "corpus: istiod derives the gateway service's SAN from its Pod, which runs as no service account (`spiffe://…/sa/`); " +
      "meshpilot's ServiceEntry stand-in for that Pod has no account, so no SAN is checked",
    where: /^gateway-api\//,
    resource: /^cluster outbound\|\d+\|\|gw-istio\.gw\.svc\.cluster\.local$/,
    path: /\.combinedValidationContext\.defaultValidationContext/,
  },
  {
    id: 'envoyfilter-filter-after-router',
    reason:
      'an HTTP_FILTER ADD appends after the router; istiod sends that listener and Envoy refuses it whole (the router must be the ' +
      'last HTTP filter). meshpilot reports the patch and sends the listener unpatched (networking/envoyfilter/envoy-rules.ts)',
    where: /^envoyfilter\/http-filter-add /,
    resource: /^listener /,
    path: /\.httpFilters(\.@order$|\[envoy\.filters\.http\.fault#2\])/,
    when: (d) => (d.path.endsWith('@order') ? subsequence(d.meshpilot, d.istiod) : d.meshpilot === undefined),
  },
  {
    id: 'wasm-resource-version',
    reason:
      "a WasmPlugin's ISTIO_META_WASM_PLUGIN_RESOURCE_VERSION is the Kubernetes resourceVersion on istiod's side (captured on an " +
      "API server) and a content hash in meshpilot's file mode: both change exactly when the plugin does",
    where: /^wasm\//,
    resource: /^ecds /,
    path: /\.ISTIO_META_WASM_PLUGIN_RESOURCE_VERSION$/,
  },
];
