/** istiod's cluster names: `outbound|<port>|<subset>|<host>`, `inbound|<port>||`, `outbound_.<port>_.<subset>_.<host>`. */
export type TrafficDirection = 'outbound' | 'inbound';

export interface ClusterName {
  readonly direction: TrafficDirection;
  readonly port: number;
  readonly subset: string;
  readonly host: string;
}

export function buildClusterName(direction: TrafficDirection, port: number, subset: string, host: string): string {
  return `${direction}|${port}|${subset}|${host}`;
}

/** istiod's SNI-DNAT cluster name (BuildDNSSrvSubsetKey): `outbound_.<port>_.<subset>_.<host>`. */
export function sniDnatClusterName(port: number, subset: string, host: string): string {
  return `outbound_.${port}_.${subset}_.${host}`;
}

/**
 * A waypoint's cluster for a bound service port (istiod's BuildSubsetKey for
 * TrafficDirectionInboundVIP): `inbound-vip|<port>|<subset>|<host>`, subset `http`, `tcp`,
 * `http/<name>` or `tcp/<name>`.
 */
export function inboundVipClusterName(port: number, subset: string, host: string): string {
  return `inbound-vip|${port}|${subset}|${host}`;
}

export function parseInboundVipClusterName(name: string): { port: number; subset: string; host: string } | undefined {
  const parts = name.split('|');
  if (parts.length !== 4 || parts[0] !== 'inbound-vip') return undefined;
  const port = Number(parts[1]);
  return Number.isInteger(port) ? { port, subset: parts[2] ?? '', host: parts[3] ?? '' } : undefined;
}

export function parseClusterName(name: string): ClusterName | undefined {
  const parts = name.split('|');
  if (parts.length !== 4) return undefined;
  const [direction, portText = '', subset = '', host = ''] = parts;
  if (direction !== 'outbound' && direction !== 'inbound') return undefined;
  const port = Number(portText);
  if (!Number.isInteger(port) || port < 1 || port > 65535) return undefined;
  return { direction, port, subset, host };
}

export const BLACKHOLE_CLUSTER = 'BlackHoleCluster';
export const PASSTHROUGH_CLUSTER = 'PassthroughCluster';
export const INBOUND_PASSTHROUGH_CLUSTER = 'InboundPassthroughCluster';
