import type { TrafficPolicy } from '../gen/networking/v1alpha3/destination_rule_pb.js';
import type { Proxy } from '../model/proxy.js';
import type { PushContext } from '../model/push-context.js';
import type { Service } from '../registry/model.js';

/** The fields of a TrafficPolicy that can be overridden per port and per subset. */
export type EffectivePolicy = Pick<TrafficPolicy, 'loadBalancer' | 'connectionPool' | 'outlierDetection' | 'tls'>;

function overlay(base: EffectivePolicy, p: EffectivePolicy | undefined): EffectivePolicy {
  if (!p) return base;
  return {
    loadBalancer: p.loadBalancer ?? base.loadBalancer,
    connectionPool: p.connectionPool ?? base.connectionPool,
    outlierDetection: p.outlierDetection ?? base.outlierDetection,
    tls: p.tls ?? base.tls,
  };
}

function forPort(tp: TrafficPolicy | undefined, port: number): EffectivePolicy | undefined {
  if (!tp) return undefined;
  const base: EffectivePolicy = { loadBalancer: tp.loadBalancer, connectionPool: tp.connectionPool, outlierDetection: tp.outlierDetection, tls: tp.tls };
  const pl = tp.portLevelSettings.find((p) => p.port?.number === port);
  return overlay(base, pl);
}

/**
 * The DestinationRule traffic policy that applies to one service port and subset, merged as
 * istiod does: top level, then the port-level entry, then the subset's policy (and its port level).
 */
export function effectiveTrafficPolicy(push: PushContext, proxy: Proxy, service: Service, port: number, subset: string): EffectivePolicy | undefined {
  const dr = push.destinationRule(service, proxy.namespace);
  if (!dr) return undefined;
  const top = forPort(dr.spec.trafficPolicy, port);
  if (subset === '') return top;
  const sub = dr.spec.subsets.find((s) => s.name === subset);
  const subPolicy = forPort(sub?.trafficPolicy, port);
  if (!top) return subPolicy;
  return overlay(top, subPolicy);
}
