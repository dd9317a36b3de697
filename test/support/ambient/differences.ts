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

/** Differences from istiod meshpilot makes on purpose, each argued. Empty: the ztunnel view equals istiod's. */
export const ACCEPTED: readonly AcceptedDifference[] = [];

export function explains(a: AcceptedDifference, view: string, d: LeafDiff): boolean {
  return a.view === view && a.resource.test(`${d.type} ${d.name}`) && (a.path?.test(d.path) ?? true) && (a.when?.(d) ?? true);
}
