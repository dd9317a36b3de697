/**
 * istioctl's k8sgateway.CRDVersionAnalyzer (IST0176): a Gateway API CRD whose bundle version (the
 * `gateway.networking.k8s.io/bundle-version` annotation) is below what this Istio version needs;
 * istiod then does not watch that kind. Unknown CRDs and unparsable versions are not reported.
 */
import { MSG } from '../analyze/messages.js';
import { objectsOf, type Analyzer } from '../analyze/model.js';

/** Istio's gatewayapi.MinimumCRDVersions at the reference version. */
const MINIMUM: ReadonlyMap<string, readonly [number, number, number]> = new Map([
  ['grpcroutes.gateway.networking.k8s.io', [1, 1, 0]],
  ['backendtlspolicies.gateway.networking.k8s.io', [1, 4, 0]],
  ['tlsroutes.gateway.networking.k8s.io', [1, 5, 0]],
  ['tcproutes.gateway.networking.k8s.io', [1, 6, 0]],
]);

const BUNDLE_VERSION = 'gateway.networking.k8s.io/bundle-version';

/** A semantic version as Masterminds/semver reads it (leading `v`, missing minor/patch allowed). */
const SEMVER = /^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$/;

export const crdVersionAnalyzer: Analyzer = {
  name: 'k8sgateway.CRDVersionAnalyzer',
  description: 'Checks Gateway API CRDs are at the minimum version required by this Istio version',
  messages: [MSG.GatewayAPICRDVersionBelowMinimum],
  analyze(s, report) {
    for (const o of objectsOf(s, 'CustomResourceDefinition')) {
      const min = MINIMUM.get(o.ref.name);
      const bv = o.annotations[BUNDLE_VERSION];
      const m = bv !== undefined ? SEMVER.exec(bv) : null;
      if (!min || !m) continue;
      const v = [Number(m[1]), Number(m[2] ?? 0), Number(m[3] ?? 0)] as const;
      const below = v[0] !== min[0] ? v[0] < min[0] : v[1] !== min[1] ? v[1] < min[1] : v[2] < min[2];
      if (!below) continue;
      const installed = `${v.join('.')}${m[4] !== undefined ? `-${m[4]}` : ''}`;
      report({ type: MSG.GatewayAPICRDVersionBelowMinimum, resource: o.ref, args: [o.ref.name, installed, min.join('.')] });
    }
  },
};
