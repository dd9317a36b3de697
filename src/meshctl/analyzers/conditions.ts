/**
 * istioctl's conditions.ConditionAnalyzer (IST0171): status conditions istiod (or a Gateway API
 * controller) wrote as failed — a Service, ServiceEntry or WorkloadEntry not bound to its
 * waypoint, an AuthorizationPolicy ztunnel or a waypoint did not accept (or accepted only in
 * part), a Gateway or an HTTP/gRPC route not accepted, programmed or resolved. Read from the
 * objects' `status` as given.
 */
import { MSG } from '../analyze/messages.js';
import type { Analyzer } from '../analyze/model.js';
import { recordsAt, stringAt } from './k8s-fields.js';

const WAYPOINT_BOUND: Readonly<Record<string, string>> = { 'istio.io/WaypointBound': 'False' };
const GATEWAY_API: Readonly<Record<string, string>> = { Accepted: 'False', Programmed: 'False', ResolvedRefs: 'False' };

/** Condition type → the status that is reported, per `group/Kind`. */
const NEGATIVE: ReadonlyMap<string, Readonly<Record<string, string>>> = new Map([
  ['/Service', WAYPOINT_BOUND],
  ['networking.istio.io/ServiceEntry', WAYPOINT_BOUND],
  ['networking.istio.io/WorkloadEntry', WAYPOINT_BOUND],
  ['security.istio.io/AuthorizationPolicy', { ZtunnelAccepted: 'False', WaypointAccepted: 'False' }],
  ['gateway.networking.k8s.io/Gateway', GATEWAY_API],
  ['gateway.networking.k8s.io/HTTPRoute', GATEWAY_API],
  ['gateway.networking.k8s.io/GRPCRoute', GATEWAY_API],
]);

export const conditionsAnalyzer: Analyzer = {
  name: 'conditions.ConditionAnalyzer',
  description: 'Checks for negative status conditions on resources',
  messages: [MSG.NegativeConditionStatus],
  analyze(s, report) {
    for (const o of s.statusObjects) {
      const group = o.apiVersion.includes('/') ? o.apiVersion.slice(0, o.apiVersion.indexOf('/')) : '';
      const kind = `${group}/${o.ref.kind}`;
      const negative = NEGATIVE.get(kind);
      if (!negative) continue;
      // Routes carry their conditions per parent.
      const conditions = kind.endsWith('Route')
        ? recordsAt(o.body, 'status', 'parents').flatMap((p) => recordsAt(p, 'conditions'))
        : recordsAt(o.body, 'status', 'conditions');
      for (const c of conditions) {
        const type = stringAt(c, 'type') ?? '';
        const reason = stringAt(c, 'reason') ?? '';
        const failed = Object.hasOwn(negative, type) && negative[type] === c.status;
        const partial = kind === 'security.istio.io/AuthorizationPolicy' && type === 'WaypointAccepted' && reason === 'PartiallyInvalid';
        if (failed || partial)
          report({ type: MSG.NegativeConditionStatus, resource: o.ref, args: [type, reason, stringAt(c, 'message') ?? ''] });
      }
    }
  },
};
