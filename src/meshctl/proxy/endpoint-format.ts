import type { LbEndpoint } from '../../gen/envoy/config/endpoint/v3/endpoint_components_pb.js';
import type { ClusterLoadAssignment } from '../../gen/envoy/config/endpoint/v3/endpoint_pb.js';
import { HealthStatus } from '../../gen/envoy/config/core/v3/health_check_pb.js';
import type { Address } from '../../gen/envoy/config/core/v3/address_pb.js';
import type { Locality } from '../../gen/envoy/config/core/v3/base_pb.js';
import { cmp, compareSubsetKeys } from './istio-metadata.js';
import { tabwrite } from './tabwriter.js';

/** `--address --port --cluster --status` of proxy-config endpoint (case-insensitive equality, as istioctl). */
export interface EndpointFilter {
  readonly address?: string;
  readonly port?: number;
  readonly cluster?: string;
  readonly status?: string;
}

interface Row {
  readonly address: string;
  readonly port: number;
  readonly cluster: string;
  readonly status: string;
  readonly locality: string;
  readonly all: string;
}

function hostOf(a: Address | undefined): { address: string; port: number } {
  const x = a?.address;
  if (x?.case === 'socketAddress')
    return { address: x.value.address, port: x.value.portSpecifier.case === 'portValue' ? x.value.portSpecifier.value : 0 };
  if (x?.case === 'pipe') return { address: `unix://${x.value.path}`, port: 0 };
  if (x?.case === 'envoyInternalAddress' && x.value.addressNameSpecifier.case === 'serverListenerName') {
    return { address: `envoy://${x.value.addressNameSpecifier.value}/${x.value.endpointId}`, port: 0 };
  }
  return { address: 'unknown', port: 0 };
}

/** istio's LocalityToString: region[/zone[/subzone]]. */
function localityString(l: Locality | undefined): string {
  if (!l) return '';
  if (l.zone === '') return l.region;
  return l.subZone === '' ? `${l.region}/${l.zone}` : `${l.region}/${l.zone}/${l.subZone}`;
}

function statusName(ep: LbEndpoint): string {
  return HealthStatus[ep.healthStatus] ?? String(ep.healthStatus);
}

function rowsOf(clas: readonly ClusterLoadAssignment[], f: EndpointFilter): Row[] {
  const rows: Row[] = [];
  for (const cla of clas) {
    for (const llb of cla.endpoints) {
      for (const ep of llb.lbEndpoints) {
        const main = ep.hostIdentifier.case === 'endpoint' ? ep.hostIdentifier.value : undefined;
        const h = hostOf(main?.address);
        const extra = (main?.additionalAddresses ?? []).map((a) => hostOf(a.address));
        const row: Row = {
          ...h,
          cluster: cla.clusterName,
          status: statusName(ep),
          locality: localityString(llb.locality),
          all: [h, ...extra].map((x) => (x.port ? `${x.address}:${x.port}` : x.address)).join(','),
        };
        if (f.address && row.address.toLowerCase() !== f.address.toLowerCase()) continue;
        if (f.port && row.port !== f.port) continue;
        if (f.cluster && row.cluster.toLowerCase() !== f.cluster.toLowerCase()) continue;
        if (f.status && row.status.toLowerCase() !== f.status.toLowerCase()) continue;
        rows.push(row);
      }
    }
  }
  return rows;
}

/**
 * `istioctl proxy-config endpoint`: ENDPOINT, STATUS, OUTLIER CHECK, CLUSTER sorted by address,
 * port, cluster. istioctl reads Envoy's /clusters; here the rows come from the EDS the control
 * plane sends, so STATUS is the EDS health status and OUTLIER CHECK is always OK (no data plane to ask).
 */
export function formatEndpoints(clas: readonly ClusterLoadAssignment[], filter: EndpointFilter = {}): string {
  const rows = rowsOf(clas, filter).sort((a, b) => cmp(a.address, b.address) || a.port - b.port || cmp(a.cluster, b.cluster));
  const table = [
    ['ENDPOINT', 'STATUS', 'OUTLIER CHECK', 'CLUSTER'],
    ...rows.map((r) => [r.port ? `${r.address}:${r.port}` : r.address, r.status, 'OK', r.cluster]),
  ];
  return tabwrite(table, 5);
}

/** The config-dump endpoint summary `proxy-config all` prints: NAME (`endpoint/<addrs>`), STATUS, LOCALITY, CLUSTER. */
export function formatEndpointsSummary(clas: readonly ClusterLoadAssignment[], filter: EndpointFilter = {}, withName = true): string {
  const sorted = [...clas].sort((a, b) => compareSubsetKeys(a.clusterName, b.clusterName));
  const table = [
    ['NAME', 'STATUS', 'LOCALITY', 'CLUSTER'],
    ...rowsOf(sorted, filter).map((r) => [withName ? `endpoint/${r.all}` : r.all, r.status, r.locality, r.cluster]),
  ];
  return tabwrite(table, 5);
}
