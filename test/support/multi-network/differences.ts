/**
 * The one place that says what the multi-network golden comparison
 * (test/e2e/multi-network-golden.test.ts) does not hold against istiod's capture, each with its
 * reason. The API server's own port is normalised at capture (test/support/multi-network/capture.ts):
 * it is a fact of the run. An ACCEPTED entry that matches no difference fails the test (remove it),
 * so the list never outlives the difference it explains. Nothing else is skipped: every leaf of
 * every ClusterLoadAssignment of every proxy is compared.
 */
import type { LeafDiff } from '../../scenarios/whole/leaves.js';

export interface AcceptedDifference {
  readonly id: string;
  readonly reason: string;
  /** The scenario of test/support/multi-network/capture.ts SCENARIOS (its name). */
  readonly scenario: string;
  /** The proxy of the scenario (a regular expression over its name). */
  readonly proxy: RegExp;
  /** The cluster name of the ClusterLoadAssignment (ACCEPTED_LISTENERS: `<type> <name>`). */
  readonly cluster: RegExp;
  /** The leaf path; `''` stands for a ClusterLoadAssignment present on one side only. Absent: any path. */
  readonly path?: RegExp;
}

/** Differences from istiod meshpilot makes on purpose, each argued. None today: the EDS equals istiod's. */
export const ACCEPTED: readonly AcceptedDifference[] = [];

/**
 * Differences in the Listeners and RouteConfigurations of the scenarios that capture them
 * (`cluster` matches `<type> <name>`: `listener 0.0.0.0_80`, `route 80`).
 */
export const ACCEPTED_LISTENERS: readonly AcceptedDifference[] = [];

/** The entry of ACCEPTED_LISTENERS that explains a listener or route difference, if any. */
export function acceptedListenerDifference(scenario: string, proxy: string, d: LeafDiff): AcceptedDifference | undefined {
  return ACCEPTED_LISTENERS.find(
    (a) =>
      a.scenario === scenario &&
      a.proxy.test(proxy) &&
      a.cluster.test(`${d.type} ${d.name}`) &&
      (a.path === undefined || a.path.test(d.path)),
  );
}

/** The entry that explains a difference of `proxy` in `scenario`, if any. */
export function acceptedFor(scenario: string, proxy: string, d: LeafDiff): AcceptedDifference | undefined {
  return ACCEPTED.find(
    (a) => a.scenario === scenario && a.proxy.test(proxy) && a.cluster.test(d.name) && (a.path === undefined || a.path.test(d.path)),
  );
}
