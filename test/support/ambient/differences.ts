/**
 * The one place that says what the ambient golden comparison (test/e2e/ambient-golden.test.ts)
 * does not hold against istiod's capture, each with its reason:
 * - NORMALISED: fields rewritten on both sides before comparing, because their value is a fact of
 *   the run, not of the control plane;
 * - ACCEPTED: differences meshpilot makes on purpose. An entry that matches nothing fails the test
 *   (remove it), so the list never outlives the difference it explains.
 * Nothing else is skipped: every other field of every resource is compared.
 */
import type { JsonValue } from '@bufbuild/protobuf';
import type { LeafDiff } from '../../scenarios/whole/leaves.js';

export interface Normalisation {
  readonly id: string;
  readonly reason: string;
  /** `type name` of the resources it rewrites (type: address, authorization, listener, route, cluster, endpoint). */
  readonly resource: RegExp;
  /** The field, as a leaf path of the comparison (for the docs and the failure message). */
  readonly field: string;
  readonly apply: (json: JsonValue) => JsonValue;
}

type J = Record<string, JsonValue>;
const isObj = (v: JsonValue | undefined): v is J => v !== null && typeof v === 'object' && !Array.isArray(v);

export const NORMALISED: readonly Normalisation[] = [
  {
    id: 'kube-apiserver-port',
    reason:
      'the default/kubernetes Service targets the API server itself; the test API server listens on a free loopback port picked per run, ' +
      'so its targetPort changes from run to run whatever the control plane',
    resource: /^address default\/kubernetes\.default\.svc\.cluster\.local$/,
    field: 'service.ports[*].targetPort',
    apply: (json) => {
      if (!isObj(json) || !isObj(json.service) || !Array.isArray(json.service.ports)) return json;
      const ports = json.service.ports.map((p) =>
        isObj(p) && p.targetPort !== undefined ? { ...p, targetPort: '<kube-apiserver port>' } : p,
      );
      return { ...json, service: { ...json.service, ports } };
    },
  },
  {
    id: 'waypoint-range-order',
    reason:
      "istiod writes the ranges of one IP range matcher (a bound workload's addresses) in map order, which differs from run to run " +
      '(seen against its own capture); the ranges of one matcher are alternatives, so their order means nothing and both sides are sorted',
    resource: /^listener main_internal$/,
    field: 'filterChainMatcher.matcherTree.customMatch.typedConfig.rangeMatchers[*].ranges',
    apply: (json) => {
      if (!isObj(json) || !isObj(json.filterChainMatcher)) return json;
      const tree = json.filterChainMatcher.matcherTree;
      const ip = isObj(tree) && isObj(tree.customMatch) ? tree.customMatch.typedConfig : undefined;
      if (!isObj(tree) || !isObj(tree.customMatch) || !isObj(ip) || !Array.isArray(ip.rangeMatchers)) return json;
      const key = (r: JsonValue): string => JSON.stringify(r);
      const rangeMatchers = ip.rangeMatchers.map((m) =>
        isObj(m) && Array.isArray(m.ranges)
          ? { ...m, ranges: [...m.ranges].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0)) }
          : m,
      );
      const customMatch = { ...tree.customMatch, typedConfig: { ...ip, rangeMatchers } };
      return { ...json, filterChainMatcher: { ...json.filterChainMatcher, matcherTree: { ...tree, customMatch } } };
    },
  },
];

export interface AcceptedDifference {
  readonly id: string;
  readonly reason: string;
  /** `ztunnel` or `waypoint`: the comparison it applies to. */
  readonly view: 'ztunnel' | 'waypoint';
  /** `type name` of the resource. */
  readonly resource: RegExp;
  /** The leaf path; `''` stands for a resource present on one side only. Absent: any path. */
  readonly path?: RegExp;
  readonly when?: (d: LeafDiff) => boolean;
}

/**
 * Differences from istiod meshpilot makes on purpose or has not implemented yet, each argued. None
 * for the ztunnel view: it equals istiod's.
 */
export const ACCEPTED: readonly AcceptedDifference[] = [
  {
    id: 'waypoint-tracing-peer-tags',
    reason:
      "istiod's waypoint HCMs carry 18 tracing custom tags with a name only (istio.source_*, istio.destination_*), which istio-proxy's " +
      'tracer fills from peer metadata; stock Envoy refuses a custom tag without a value source (CustomTag.type is required), so ' +
      'meshpilot sends only the literal tags (istio.cluster_id, istio.mesh_id, istio.namespace …) and the index of each later tag shifts',
    view: 'waypoint',
    resource: /^listener main_internal$/,
    path: /^filterChains\[[^\]]+\]\.filters\[envoy\.filters\.network\.http_connection_manager\]\.typedConfig\.tracing\.customTags\[\d+\]\.(tag|literal\.value)$/,
  },
  {
    id: 'waypoint-double-hbone',
    reason:
      'double HBONE (inner_connect_originate / outer_connect_originate: HBONE inside HBONE to a service on another network through its ' +
      'east-west gateway) is not implemented: meshpilot has no multi-network ambient yet, so both resources are wholly absent',
    view: 'waypoint',
    resource: /^(cluster|listener) (inner|outer)_connect_originate$/,
    path: /^$/,
  },
  {
    id: 'waypoint-service-traffic-distribution',
    reason:
      "the waypoint's own Service carries networking.istio.io/traffic-distribution: PreferClose, which istiod turns into locality-weighted " +
      "load balancing on its clusters; meshpilot does not apply a Service's traffic distribution to Envoy clusters yet (the sidecar's " +
      'clusters neither: src/networking/endpoint/locality-lb.ts), so that one field is absent',
    view: 'waypoint',
    resource: /^cluster inbound-vip\|150(08|21)\|(tcp|http)\|waypoint\.apps\.svc\.cluster\.local$/,
    path: /^commonLbConfig\.localityWeightedLbConfig$/,
  },
];

export function explains(a: AcceptedDifference, view: string, d: LeafDiff): boolean {
  return a.view === view && a.resource.test(`${d.type} ${d.name}`) && (a.path?.test(d.path) ?? true) && (a.when?.(d) ?? true);
}
