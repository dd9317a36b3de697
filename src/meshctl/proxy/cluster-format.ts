import type { Cluster } from '../../gen/envoy/config/cluster/v3/cluster_pb.js';
import { Cluster_DiscoveryType } from '../../gen/envoy/config/cluster/v3/cluster_pb.js';
import { compareSubsetKeys, describeManagement, parseSubsetKey } from './istio-metadata.js';
import { tabwrite } from './tabwriter.js';

/** `--fqdn --port --subset --direction`: substring matches on the cluster name, as istioctl does. */
export interface ClusterFilter {
  readonly fqdn?: string;
  readonly port?: number;
  readonly subset?: string;
  readonly direction?: string;
}

export function clusterMatches(f: ClusterFilter, c: Cluster): boolean {
  const name = c.name;
  if (f.fqdn && !name.includes(f.fqdn)) return false;
  if (f.direction && !name.includes(f.direction)) return false;
  if (f.subset && !name.includes(f.subset)) return false;
  if (f.port && !name.includes(`|${f.port}|`)) return false;
  return true;
}

/** Envoy's Cluster.type as Go prints the enum (a cluster_type extension reads as STATIC, the default). */
function clusterType(c: Cluster): string {
  const t = c.clusterDiscoveryType.case === 'type' ? c.clusterDiscoveryType.value : Cluster_DiscoveryType.STATIC;
  return Cluster_DiscoveryType[t] ?? String(t);
}

/** Clusters in istioctl's order (host, subset, port, direction); the sort is stable. */
export function sortClusters(clusters: readonly Cluster[]): Cluster[] {
  return [...clusters].sort((a, b) => compareSubsetKeys(a.name, b.name));
}

/**
 * `istioctl proxy-config cluster` (short): SERVICE FQDN, PORT, SUBSET, DIRECTION, TYPE,
 * DESTINATION RULE; with `withName` (proxy-config all) a leading NAME column `cluster/<name>`.
 */
export function formatClusters(clusters: readonly Cluster[], filter: ClusterFilter = {}, withName = false): string {
  const header = ['SERVICE FQDN', 'PORT', 'SUBSET', 'DIRECTION', 'TYPE', 'DESTINATION RULE'];
  const rows: string[][] = [withName ? ['NAME', ...header] : header];
  for (const c of sortClusters(clusters)) {
    if (!clusterMatches(filter, c)) continue;
    const dr = describeManagement(c.metadata);
    const name = withName ? `cluster/${c.name}` : c.name;
    if (c.name.split('|').length > 3) {
      const k = parseSubsetKey(c.name);
      const cells = [k.host, String(k.port), k.subset || '-', k.direction, clusterType(c), dr];
      rows.push(withName ? [name, ...cells] : cells);
    } else {
      // istioctl prints the (prefixed) name in both NAME and SERVICE FQDN here.
      rows.push([...(withName ? [name] : []), name, '-', '-', '-', clusterType(c), dr]);
    }
  }
  return tabwrite(rows, 5);
}
