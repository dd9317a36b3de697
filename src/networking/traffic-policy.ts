import { create } from '@bufbuild/protobuf';
import type { Duration } from '@bufbuild/protobuf/wkt';
import {
  LocalityLoadBalancerSettingSchema,
  type ClientTLSSettings_TLSmode,
  type ConnectionPoolSettings_TCPSettings_TcpKeepalive,
  type DestinationRule,
  type LocalityLoadBalancerSetting,
  type TrafficPolicy,
} from '../gen/networking/v1alpha3/destination_rule_pb.js';
import type { Proxy, PushContext } from '../model/index.js';
import type { MeshConfig } from '../config/index.js';
import type { Service } from '../registry/index.js';
import { durationFromMs } from './common.js';

/** The fields of a TrafficPolicy that can be overridden per port and per subset. */
export type EffectivePolicy = Pick<TrafficPolicy, 'loadBalancer' | 'connectionPool' | 'outlierDetection' | 'tls'>;

const FIELDS = ['loadBalancer', 'connectionPool', 'outlierDetection', 'tls'] as const;

function pick(p: EffectivePolicy): EffectivePolicy {
  return { loadBalancer: p.loadBalancer, connectionPool: p.connectionPool, outlierDetection: p.outlierDetection, tls: p.tls };
}

/**
 * istiod's GetPortLevelTrafficPolicy: a matching port-level entry replaces the whole policy (its
 * unset fields fall back to defaults, not to the top level, as the API documents).
 */
function forPort(tp: TrafficPolicy | undefined, port: number): { policy: EffectivePolicy | undefined; portLevel: boolean } {
  if (!tp) return { policy: undefined, portLevel: false };
  const pl = tp.portLevelSettings.find((p) => p.port?.number === port);
  return pl ? { policy: pick(pl), portLevel: true } : { policy: pick(tp), portLevel: false };
}

/**
 * istiod's MergeSubsetTrafficPolicy over one DestinationRule: the (port-level) top policy, then the
 * subset's fields that are set — all four when the subset has a port-level entry for the port.
 */
export function mergeTrafficPolicy(dr: DestinationRule | undefined, port: number, subset: string): EffectivePolicy | undefined {
  if (!dr) return undefined;
  const top = forPort(dr.trafficPolicy, port).policy;
  if (subset === '') return top;
  const sub = forPort(dr.subsets.find((s) => s.name === subset)?.trafficPolicy, port);
  if (!sub.policy) return top;
  if (!top) return sub.policy;
  const merged: EffectivePolicy = { ...top };
  for (const f of FIELDS) {
    if (sub.policy[f] !== undefined || sub.portLevel) (merged as Record<string, unknown>)[f] = sub.policy[f];
  }
  return merged;
}

/**
 * The DestinationRule traffic policy that applies to one service port and subset, merged as
 * istiod does: top level (or its port-level entry), then the subset's policy (or its port-level entry).
 */
export function effectiveTrafficPolicy(
  push: PushContext,
  proxy: Proxy,
  service: Service,
  port: number,
  subset: string,
): EffectivePolicy | undefined {
  return mergeTrafficPolicy(push.destinationRule(service, proxy.namespace)?.spec, port, subset);
}

function tlsModeOfPolicy(tp: TrafficPolicy | undefined, port: number): ClientTLSSettings_TLSmode | undefined {
  if (!tp) return undefined;
  const pl = tp.portLevelSettings.find((p) => p.port?.number === port && p.tls !== undefined);
  return (pl?.tls ?? tp.tls)?.mode;
}

/**
 * The TLS mode a DestinationRule sets for a port and subset, as istiod's EDS mTLS check reads it
 * (tlsModeForDestinationRule): the subset's (port-level first), else the top level's — unlike
 * mergeTrafficPolicy, a port-level entry without `tls` does not hide the top-level `tls`.
 */
export function destinationRuleTlsMode(
  dr: DestinationRule | undefined,
  port: number,
  subset: string,
): ClientTLSSettings_TLSmode | undefined {
  if (!dr) return undefined;
  if (subset === '') return tlsModeOfPolicy(dr.trafficPolicy, port);
  const sub = dr.subsets.find((s) => s.name === subset);
  if (!sub) return undefined;
  return tlsModeOfPolicy(sub.trafficPolicy, port) ?? tlsModeOfPolicy(dr.trafficPolicy, port);
}

/**
 * MeshConfig fields the cluster and endpoint builders read. MeshConfig does not carry them yet, so
 * they are read when present and istiod's defaults apply otherwise (mesh.DefaultMeshConfig).
 */
export interface MeshTrafficFields {
  readonly enableAutoMtls?: boolean;
  readonly localityLbSetting?: LocalityLoadBalancerSetting;
  readonly dnsRefreshRateMs?: number;
  readonly h2UpgradePolicy?: 'DO_NOT_UPGRADE' | 'UPGRADE';
  readonly inboundTrafficPolicy?: 'PASSTHROUGH' | 'LOCALHOST';
  readonly tcpKeepalive?: ConnectionPoolSettings_TCPSettings_TcpKeepalive;
}

export interface MeshTrafficSettings {
  readonly connectTimeout: Duration;
  readonly enableAutoMtls: boolean;
  /** Undefined when locality load balancing is disabled mesh-wide. */
  readonly localityLbSetting: LocalityLoadBalancerSetting | undefined;
  readonly dnsRefreshRate: Duration;
  readonly h2Upgrade: boolean;
  readonly inboundTrafficPolicy: 'PASSTHROUGH' | 'LOCALHOST';
  readonly tcpKeepalive: ConnectionPoolSettings_TCPSettings_TcpKeepalive | undefined;
}

const DEFAULT_LOCALITY_LB = create(LocalityLoadBalancerSettingSchema, { enabled: true });

export function meshTrafficSettings(mesh: MeshConfig): MeshTrafficSettings {
  const m = mesh as MeshConfig & MeshTrafficFields;
  return {
    connectTimeout: durationFromMs(mesh.connectTimeoutMs),
    enableAutoMtls: m.enableAutoMtls ?? true,
    localityLbSetting: m.localityLbSetting ?? DEFAULT_LOCALITY_LB,
    dnsRefreshRate: durationFromMs(m.dnsRefreshRateMs ?? 60_000),
    h2Upgrade: m.h2UpgradePolicy === 'UPGRADE',
    inboundTrafficPolicy: m.inboundTrafficPolicy ?? 'PASSTHROUGH',
    tcpKeepalive: m.tcpKeepalive,
  };
}
