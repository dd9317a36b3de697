import { create } from '@bufbuild/protobuf';
import { Cluster_DiscoveryType, Cluster_LbPolicy, ClusterSchema, type Cluster } from '../../gen/envoy/config/cluster/v3/cluster_pb.js';
import type { OutlierDetectionSchema } from '../../gen/envoy/config/cluster/v3/outlier_detection_pb.js';
import type { CircuitBreakers_ThresholdsSchema } from '../../gen/envoy/config/cluster/v3/circuit_breaker_pb.js';
import {
  type ConnectionPoolSettings,
  type LoadBalancerSettings,
  type OutlierDetection,
} from '../../gen/networking/v1alpha3/destination_rule_pb.js';
import type { MeshConfig } from '../../config/index.js';
import { adsConfigSource, durationFromMs, type Init } from '../common.js';
import type { EffectivePolicy } from '../traffic-policy.js';

const MAX_UINT32 = 4294967295;
const DEFAULT_RING_SIZE = 1024n;

/**
 * The LB policy of a proxyless gRPC cluster, as istiod's grpcgen sets it: RING_HASH for
 * consistentHash, else ROUND_ROBIN (or the caller's fallback) — gRPC has no LEAST_REQUEST,
 * RANDOM or CLUSTER_PROVIDED policy and NACKs a cluster naming one.
 */
function lbPolicy(
  lb: LoadBalancerSettings | undefined,
  fallback: Cluster_LbPolicy,
): Pick<Init<typeof ClusterSchema>, 'lbPolicy' | 'lbConfig'> {
  const p = lb?.lbPolicy;
  if (p?.case === 'consistentHash') {
    const ringSize = p.value.hashAlgorithm.case === 'ringHash' ? p.value.hashAlgorithm.value.minimumRingSize : p.value.minimumRingSize;
    return {
      lbPolicy: Cluster_LbPolicy.RING_HASH,
      lbConfig: { case: 'ringHashLbConfig', value: { minimumRingSize: ringSize > 0n ? ringSize : DEFAULT_RING_SIZE } },
    };
  }
  return { lbPolicy: fallback };
}

/** connectionPool → circuit-breaker thresholds; istiod sets every unset limit to max uint32. */
function thresholds(cp: ConnectionPoolSettings | undefined): Init<typeof CircuitBreakers_ThresholdsSchema> {
  const pick = (v: number | undefined): number => (v !== undefined && v > 0 ? v : MAX_UINT32);
  return {
    maxConnections: pick(cp?.tcp?.maxConnections),
    maxPendingRequests: pick(cp?.http?.http1MaxPendingRequests),
    maxRequests: pick(cp?.http?.http2MaxRequests),
    maxRetries: pick(cp?.http?.maxRetries),
  };
}

function outlierDetection(od: OutlierDetection | undefined): Init<typeof OutlierDetectionSchema> | undefined {
  if (!od) return undefined;
  // Success-rate ejection is on by default in Envoy and gRPC; Istio has no setting for it and turns it off.
  const out: Init<typeof OutlierDetectionSchema> = { enforcingSuccessRate: 0 };
  const c5xx = od.consecutive5xxErrors ?? (od.consecutiveErrors > 0 ? od.consecutiveErrors : undefined);
  if (c5xx !== undefined) {
    out.consecutive5xx = c5xx;
    out.enforcingConsecutive5xx = c5xx > 0 ? 100 : 0;
  } else {
    out.enforcingConsecutive5xx = 0;
  }
  if (od.consecutiveGatewayErrors !== undefined) {
    out.consecutiveGatewayFailure = od.consecutiveGatewayErrors;
    out.enforcingConsecutiveGatewayFailure = od.consecutiveGatewayErrors > 0 ? 100 : 0;
  }
  if (od.interval) out.interval = od.interval;
  if (od.baseEjectionTime) out.baseEjectionTime = od.baseEjectionTime;
  if (od.maxEjectionPercent > 0) out.maxEjectionPercent = od.maxEjectionPercent;
  return out;
}

export interface EdsClusterInput {
  readonly name: string;
  readonly policy: EffectivePolicy | undefined;
  readonly mesh: MeshConfig;
  readonly defaultLbPolicy: Cluster_LbPolicy;
}

/** A proxyless gRPC EDS cluster fed over ADS, with the DestinationRule's LB, circuit breakers and outlier detection. */
export function buildEdsCluster(input: EdsClusterInput): Cluster {
  const p = input.policy;
  const connectTimeout = p?.connectionPool?.tcp?.connectTimeout ?? durationFromMs(input.mesh.connectTimeoutMs);
  const od = outlierDetection(p?.outlierDetection);
  return create(ClusterSchema, {
    name: input.name,
    clusterDiscoveryType: { case: 'type', value: Cluster_DiscoveryType.EDS },
    edsClusterConfig: { edsConfig: adsConfigSource(), serviceName: input.name },
    connectTimeout,
    ...lbPolicy(p?.loadBalancer, input.defaultLbPolicy),
    circuitBreakers: { thresholds: [thresholds(p?.connectionPool)] },
    ...(od ? { outlierDetection: od } : {}),
  });
}
