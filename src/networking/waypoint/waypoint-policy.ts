/**
 * AuthorizationPolicies of a waypoint (istiod's WorkloadPolicyMatcher for waypoints): a policy
 * applies when a targetRef names the waypoint's Gateway (in the policy's namespace) or the bound
 * service (a Kubernetes Service or a ServiceEntry, in the policy's namespace). Selector and
 * namespace-wide policies are for ztunnel and sidecars, not waypoints. The RBAC filters come from
 * the shared builder; a waypoint reads the peer's identity from filter state (the HBONE
 * terminator stores the client certificate's URI SAN there), not from a TLS connection of its own.
 */
import { anyPack, anyUnpack, type Any } from '@bufbuild/protobuf/wkt';
import { create, type DescMessage, type MessageShape } from '@bufbuild/protobuf';
import type { Config } from '../../config/index.js';
import { GATEWAY_API_GROUP } from '../../config/constants.js';
import type { Principal } from '../../gen/envoy/config/rbac/v3/rbac_pb.js';
import { FilterStateMatcherSchema } from '../../gen/envoy/type/matcher/v3/filter_state_pb.js';
import { RBACSchema as HttpRbacSchema } from '../../gen/envoy/extensions/filters/http/rbac/v3/rbac_pb.js';
import { RBACSchema as NetworkRbacSchema } from '../../gen/envoy/extensions/filters/network/rbac/v3/rbac_pb.js';
import { AuthorizationPolicy_Action } from '../../gen/security/v1beta1/authorization_policy_pb.js';
import type { PushContext, WaypointKey } from '../../model/index.js';
import type { Service } from '../../registry/index.js';
import { buildHttpRbacFilters, buildNetworkRbacFilters, type AuthzPolicies } from '../policy/index.js';
import type { HttpFilterInit } from '../listener/hcm.js';
import type { FilterInit } from '../listener/tcp-proxy.js';
import { isKubeService, PEER_PRINCIPAL_KEY } from './waypoint-common.js';

type Policy = Config<'AuthorizationPolicy'>;

/** Whether `p` targets the waypoint or `svc` (undefined: the waypoint's own policies, for the direct-workload chains). */
export function targetsWaypoint(p: Policy, waypoint: WaypointKey, svc: Service | undefined): boolean {
  const refs = p.spec.targetRefs.length > 0 ? p.spec.targetRefs : p.spec.targetRef ? [p.spec.targetRef] : [];
  return refs.some((r) => {
    const ns = r.namespace !== '' ? r.namespace : p.meta.namespace;
    if (ns !== p.meta.namespace) return false;
    if (r.kind === 'Gateway' && r.group === GATEWAY_API_GROUP) return ns === waypoint.namespace && r.name === waypoint.name;
    if (!svc || ns !== svc.namespace) return false;
    if (r.kind === 'Service' && r.group === '') return isKubeService(svc.source) && svc.source.name === r.name;
    if (r.kind === 'ServiceEntry' && r.group === 'networking.istio.io')
      return svc.source.kind === 'ServiceEntry' && svc.source.name === r.name;
    return false;
  });
}

export function waypointPolicies(push: PushContext, waypoint: WaypointKey, svc: Service | undefined): AuthzPolicies {
  const all = push.config.list('AuthorizationPolicy').filter((p) => targetsWaypoint(p, waypoint, svc));
  const of = (a: AuthorizationPolicy_Action): Policy[] => all.filter((p) => p.spec.action === a);
  return {
    allow: of(AuthorizationPolicy_Action.ALLOW),
    deny: of(AuthorizationPolicy_Action.DENY),
    audit: of(AuthorizationPolicy_Action.AUDIT),
  };
}

/** A principal with every `authenticated` match turned into a match of the peer principal in filter state. */
function fromFilterState(p: Principal): void {
  const id = p.identifier;
  switch (id.case) {
    case 'authenticated': {
      const m = id.value.principalName;
      p.identifier = {
        case: 'filterState',
        value: create(FilterStateMatcherSchema, {
          key: PEER_PRINCIPAL_KEY,
          matcher: m ? { case: 'stringMatch', value: m } : { case: undefined },
        }),
      };
      return;
    }
    case 'andIds':
    case 'orIds':
      id.value.ids.forEach(fromFilterState);
      return;
    case 'notId':
      fromFilterState(id.value);
      return;
    default:
      return;
  }
}

function rewritten<D extends DescMessage & { typeName: string }>(schema: D, any: Any): Any {
  const m = anyUnpack(any, schema) as
    | (MessageShape<D> & {
        rules?: { policies: Record<string, { principals: Principal[] }> };
        shadowRules?: { policies: Record<string, { principals: Principal[] }> };
      })
    | undefined;
  if (!m) return any;
  for (const rules of [m.rules, m.shadowRules])
    for (const pol of Object.values(rules?.policies ?? {})) pol.principals.forEach(fromFilterState);
  return anyPack(schema, m);
}

const opts = (push: PushContext): { trustDomain: string } => ({ trustDomain: push.mesh.trustDomain });

export function waypointHttpRbac(push: PushContext, policies: AuthzPolicies): HttpFilterInit[] {
  return buildHttpRbacFilters(policies, opts(push)).map((f) =>
    f.configType?.case === 'typedConfig'
      ? { ...f, configType: { case: 'typedConfig', value: rewritten(HttpRbacSchema, f.configType.value as Any) } }
      : f,
  );
}

export function waypointNetworkRbac(push: PushContext, policies: AuthzPolicies): FilterInit[] {
  return buildNetworkRbacFilters(policies, opts(push)).map((f) =>
    f.configType?.case === 'typedConfig'
      ? { ...f, configType: { case: 'typedConfig', value: rewritten(NetworkRbacSchema, f.configType.value as Any) } }
      : f,
  );
}
