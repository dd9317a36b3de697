import { create } from '@bufbuild/protobuf';
import { HealthStatus } from '../../gen/envoy/config/core/v3/health_check_pb.js';
import { ClusterLoadAssignmentSchema, type ClusterLoadAssignment } from '../../gen/envoy/config/endpoint/v3/endpoint_pb.js';
import type { LocalityLbEndpointsSchema } from '../../gen/envoy/config/endpoint/v3/endpoint_components_pb.js';
import type { Endpoint } from '../../registry/index.js';
import type { Init } from '../common.js';

function localityKey(e: Endpoint): string {
  return `${e.locality.region}/${e.locality.zone}/${e.locality.subzone}`;
}

/**
 * ClusterLoadAssignment with one LocalityLbEndpoints per locality. Every locality carries a
 * load_balancing_weight (the sum of its endpoints'): gRPC ignores a locality without one.
 */
export function buildLoadAssignment(clusterName: string, endpoints: readonly Endpoint[]): ClusterLoadAssignment {
  const groups = new Map<string, Endpoint[]>();
  for (const e of endpoints) {
    const k = localityKey(e);
    const g = groups.get(k);
    if (g) g.push(e);
    else groups.set(k, [e]);
  }
  const localities: Init<typeof LocalityLbEndpointsSchema>[] = [...groups.keys()].sort().map((k) => {
    const eps = groups.get(k)!;
    const first = eps[0]!;
    return {
      locality: { region: first.locality.region, zone: first.locality.zone, subZone: first.locality.subzone },
      lbEndpoints: eps.map((e) => ({
        hostIdentifier: { case: 'endpoint', value: { address: socketAddress(e) } },
        healthStatus: HealthStatus.HEALTHY,
        loadBalancingWeight: e.weight,
      })),
      loadBalancingWeight: eps.reduce((s, e) => s + e.weight, 0),
    };
  });
  return create(ClusterLoadAssignmentSchema, { clusterName, endpoints: localities });
}

function socketAddress(e: Endpoint): Init<typeof import('../../gen/envoy/config/core/v3/address_pb.js').AddressSchema> {
  if (e.address.startsWith('unix://')) return { address: { case: 'pipe', value: { path: e.address.slice('unix://'.length) } } };
  return { address: { case: 'socketAddress', value: { address: e.address, portSpecifier: { case: 'portValue', value: e.port } } } };
}
