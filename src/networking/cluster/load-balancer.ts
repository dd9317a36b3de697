import {
  Cluster_DiscoveryType,
  Cluster_LbPolicy,
  type Cluster_SlowStartConfigSchema,
} from '../../gen/envoy/config/cluster/v3/cluster_pb.js';
import type { OutlierDetectionSchema } from '../../gen/envoy/config/cluster/v3/outlier_detection_pb.js';
import {
  LoadBalancerSettings_SimpleLB as SimpleLB,
  type LoadBalancerSettings,
  type OutlierDetection,
} from '../../gen/networking/v1alpha3/destination_rule_pb.js';
import type { Init } from '../common.js';
import { applyLocalityLb, effectiveLocalitySetting, needsLocalityWeightedConfig, type LocalityLbInput } from '../endpoint/locality-lb.js';
import type { MeshTrafficSettings } from '../traffic-policy.js';
import { discoveryType, type ClusterDraft } from './cluster-draft.js';

const enforcing = (v: number): number => (v > 0 ? 100 : 0);

/**
 * istiod's applyOutlierDetection: success-rate ejection off, consecutive 5xx / gateway errors
 * enforced at 100% when non-zero, and the panic threshold set to minHealthPercent (0 by default:
 * panic routing is rarely wanted with few pods). The deprecated consecutiveErrors is ignored, as
 * current istiod does. Deliberate gap: outlierDetectionHttpErrorCodes (needs a newer
 * HttpProtocolOptions proto with outlier_detection).
 */
export function applyOutlierDetection(d: ClusterDraft, od: OutlierDetection | undefined): void {
  if (!od) return;
  const out: Init<typeof OutlierDetectionSchema> = { enforcingSuccessRate: 0 };
  if (od.consecutive5xxErrors !== undefined) {
    out.consecutive5xx = od.consecutive5xxErrors;
    out.enforcingConsecutive5xx = enforcing(od.consecutive5xxErrors);
  }
  if (od.consecutiveGatewayErrors !== undefined) {
    out.consecutiveGatewayFailure = od.consecutiveGatewayErrors;
    out.enforcingConsecutiveGatewayFailure = enforcing(od.consecutiveGatewayErrors);
  }
  if (od.interval) out.interval = od.interval;
  if (od.baseEjectionTime) out.baseEjectionTime = od.baseEjectionTime;
  if (od.maxEjectionPercent > 0) out.maxEjectionPercent = od.maxEjectionPercent;
  if (od.splitExternalLocalOriginErrors) {
    out.splitExternalLocalOriginErrors = true;
    if ((od.consecutiveLocalOriginFailures ?? 0) > 0) {
      out.consecutiveLocalOriginFailure = od.consecutiveLocalOriginFailures!;
      out.enforcingConsecutiveLocalOriginFailure = 100;
    }
    out.enforcingLocalOriginSuccessRate = 0;
  }
  d.c.outlierDetection = out;
  if (od.minHealthPercent >= 0) (d.c.commonLbConfig ??= {}).healthyPanicThreshold = { value: od.minHealthPercent };
}

/** istiod's setWarmup / setSlowStartConfig for ROUND_ROBIN and LEAST_REQUEST. */
function slowStart(lb: LoadBalancerSettings | undefined): Init<typeof Cluster_SlowStartConfigSchema> | undefined {
  if (lb?.warmup) {
    return {
      ...(lb.warmup.duration ? { slowStartWindow: lb.warmup.duration } : {}),
      // istiod's fixed runtime key: the aggression is not meant to be overridden at runtime.
      aggression: { defaultValue: lb.warmup.aggression ?? 1, runtimeKey: '(' },
      minWeightPercent: { value: lb.warmup.minimumPercent ?? 10 },
    };
  }
  return lb?.warmupDurationSecs ? { slowStartWindow: lb.warmupDurationSecs } : undefined;
}

function setPolicy(d: ClusterDraft, policy: Cluster_LbPolicy, lb: LoadBalancerSettings | undefined): void {
  d.c.lbPolicy = policy;
  const ss = slowStart(lb);
  if (!ss) return;
  d.c.lbConfig =
    policy === Cluster_LbPolicy.ROUND_ROBIN
      ? { case: 'roundRobinLbConfig', value: { slowStartConfig: ss } }
      : { case: 'leastRequestLbConfig', value: { slowStartConfig: ss } };
}

/** istiod's ApplyRingHashLoadBalancer: consistentHash picks RING_HASH (1024 minimum by default) or MAGLEV. */
function applyConsistentHash(d: ClusterDraft, lb: LoadBalancerSettings | undefined): void {
  if (lb?.lbPolicy.case !== 'consistentHash') return;
  const ch = lb.lbPolicy.value;
  const alg = ch.hashAlgorithm;
  if (alg.case === 'maglev') {
    d.c.lbPolicy = Cluster_LbPolicy.MAGLEV;
    if (alg.value.tableSize !== 0n) d.c.lbConfig = { case: 'maglevLbConfig', value: { tableSize: alg.value.tableSize } };
  } else if (alg.case === 'ringHash') {
    d.c.lbPolicy = Cluster_LbPolicy.RING_HASH;
    if (alg.value.minimumRingSize !== 0n)
      d.c.lbConfig = { case: 'ringHashLbConfig', value: { minimumRingSize: alg.value.minimumRingSize } };
  } else {
    d.c.lbPolicy = Cluster_LbPolicy.RING_HASH;
    d.c.lbConfig = { case: 'ringHashLbConfig', value: { minimumRingSize: ch.minimumRingSize !== 0n ? ch.minimumRingSize : 1024n } };
  }
}

export interface LoadBalancerInput {
  readonly lb: LoadBalancerSettings | undefined;
  readonly mesh: MeshTrafficSettings;
  readonly proxy: Omit<LocalityLbInput, 'setting' | 'enableFailover'>;
}

/**
 * istiod's applyLoadBalancer: locality LB config (and, for inline endpoints, priorities relative
 * to the proxy), then the policy — LEAST_REQUEST unless the rule says otherwise; PASSTHROUGH turns
 * the cluster into ORIGINAL_DST; consistentHash picks a hash LB (the hash policy lives on routes).
 */
export function applyLoadBalancer(d: ClusterDraft, input: LoadBalancerInput): void {
  const { lb } = input;
  if (d.c.lbPolicy === Cluster_LbPolicy.CLUSTER_PROVIDED) return;
  // istiod sends unready endpoints too (PILOT_AUTO_SEND_UNHEALTHY_ENDPOINTS defaults on), so panic
  // mode, which would route to them, is off unless outlier detection's minHealthPercent set it:
  // on every cluster here, ORIGINAL_DST too (istiod sets it before it turns to the policy).
  (d.c.commonLbConfig ??= {}).healthyPanicThreshold ??= { value: 0 };
  const setting = effectiveLocalitySetting(lb, input.mesh.localityLbSetting);
  const outlier = d.c.outlierDetection !== undefined;
  if (needsLocalityWeightedConfig(setting, outlier)) {
    (d.c.commonLbConfig ??= {}).localityConfigSpecifier = { case: 'localityWeightedLbConfig', value: {} };
  }
  if (setting && d.inlineEndpoints)
    d.inlineEndpoints = applyLocalityLb(d.inlineEndpoints, { ...input.proxy, setting, enableFailover: outlier });
  if (discoveryType(d) === Cluster_DiscoveryType.ORIGINAL_DST) {
    d.c.lbPolicy = Cluster_LbPolicy.CLUSTER_PROVIDED;
    return;
  }
  const simple = lb?.lbPolicy.case === 'simple' ? lb.lbPolicy.value : SimpleLB.UNSPECIFIED;
  switch (simple) {
    case SimpleLB.RANDOM:
      d.c.lbPolicy = Cluster_LbPolicy.RANDOM;
      break;
    case SimpleLB.ROUND_ROBIN:
      setPolicy(d, Cluster_LbPolicy.ROUND_ROBIN, lb);
      break;
    case SimpleLB.PASSTHROUGH:
      d.c.lbPolicy = Cluster_LbPolicy.CLUSTER_PROVIDED;
      d.c.clusterDiscoveryType = { case: 'type', value: Cluster_DiscoveryType.ORIGINAL_DST };
      delete d.inlineEndpoints;
      break;
    default: // LEAST_CONN, LEAST_REQUEST and unset: istiod's default LEAST_REQUEST
      setPolicy(d, Cluster_LbPolicy.LEAST_REQUEST, lb);
  }
  applyConsistentHash(d, lb);
}
