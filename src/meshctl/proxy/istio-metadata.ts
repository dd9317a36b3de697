import type { Metadata } from '../../gen/envoy/config/core/v3/base_pb.js';

/**
 * istioctl's describeManagement: the Istio config a resource came from, read from
 * filter_metadata.istio.config (`/apis/networking.istio.io/v1/namespaces/<ns>/<kind>/<name>`),
 * printed `<name>.<namespace>`; another path is `<unknown>`; no metadata is empty.
 */
export function describeManagement(metadata: Metadata | undefined): string {
  const path = metadata?.filterMetadata.istio?.config;
  if (typeof path !== 'string') return '';
  if (!path.startsWith('/apis/networking.istio.io/')) return '<unknown>';
  const pieces = path.split('/');
  return pieces.length === 8 ? `${pieces[7]}.${pieces[5]}` : '';
}

/** Istio's lenient ParseSubsetKey: `direction|port|subset|host`; a port that is no number is 0. */
export function parseSubsetKey(name: string): { direction: string; port: number; subset: string; host: string } {
  const parts = name.split('|');
  if (parts.length < 4) return { direction: '', port: 0, subset: '', host: '' };
  const port = /^[+-]?\d+$/.test(parts[1] ?? '') ? Number(parts[1]) : 0;
  return { direction: parts[0] ?? '', port, subset: parts[2] ?? '', host: parts[3] ?? '' };
}

/** istioctl's safelyParseSubsetKey: names that are no subset key sort by the whole name. */
export function sortKey(name: string): { direction: string; port: number; subset: string; host: string } {
  return name.split('|').length > 3 ? parseSubsetKey(name) : { direction: '', port: 0, subset: '', host: name };
}

/** istioctl's cluster/endpoint order: host, then subset, port, direction. */
export function compareSubsetKeys(a: string, b: string): number {
  const x = sortKey(a);
  const y = sortKey(b);
  return cmp(x.host, y.host) || cmp(x.subset, y.subset) || x.port - y.port || cmp(x.direction, y.direction);
}

export function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
